//! Lost holds in C: the event and callback types, the listener that calls C, and the
//! listeners a handle registered (`rlock_<primitive>_on_lost`), removed when it is freed.

use std::ffi::{c_char, c_void, CString};
use std::sync::Mutex;

use super::{write_out, Failure};
use crate::watchdog::{ListenerId, LostEvent};

/// What the watchdog lost, for `rlock_lost_callback`: the same fields as the Python and Node
/// lost-hold events. Every string is NUL-terminated and valid only during the callback.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct rlock_lost_event {
    /// The primitive's name (a lock's or a permit-expirable semaphore's).
    pub name: *const c_char,
    /// The kind of hold: `"lock"` (the reentrant, fenced, fair, spin and non-reentrant locks),
    /// `"read"`, `"write"` (the sides of a read-write lock) or `"permit"` (a permit of a
    /// permit-expirable semaphore).
    pub kind: *const c_char,
    /// The owner as stored in Redis, `"<client uuid>:<owner id>"` (for a permit, the client's
    /// owner 0: permits have no owner).
    pub owner: *const c_char,
    /// `"gone"` (confirmed: a renewal found the hold no longer there: expired, force-unlocked
    /// or deleted), `"lease_doubt"` (no renewal was confirmed in time, so the lease may end
    /// within the `lease_doubt_margin_ms` option: told before another owner can acquire) or
    /// `"lease_ending"` (a lease nobody renews ends within that margin).
    pub reason: *const c_char,
    /// For kind `"permit"` the permit id (32 hex characters); NULL otherwise.
    pub permit_id: *const c_char,
}

/// Called when the watchdog loses a hold of the client, with the `userdata` given to
/// `rlock_client_on_lost` and the event (valid only during the call).
pub type rlock_lost_callback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, event: *const rlock_lost_event)>;

pub(crate) struct Callback {
    f: unsafe extern "C" fn(*mut c_void, *const rlock_lost_event),
    userdata: *mut c_void,
}
// SAFETY: the header requires the callback and its userdata to be usable from any thread.
unsafe impl Send for Callback {}
// SAFETY: as above.
unsafe impl Sync for Callback {}

/// The core listener that calls `f(userdata, event)` for every event it is given. Events whose
/// strings hold a NUL (none is expected: names come from C strings) are dropped rather than
/// cut short.
pub(crate) fn listener(
    f: unsafe extern "C" fn(*mut c_void, *const rlock_lost_event),
    userdata: *mut c_void,
) -> impl Fn(&LostEvent) + Send + Sync + 'static {
    let cb = Callback { f, userdata };
    move |event| {
        let cb = &cb;
        let strings = (
            CString::new(event.name.as_bytes()),
            CString::new(event.kind),
            CString::new(event.owner.as_str()),
            CString::new(event.reason.as_str()),
            event.permit_id.as_deref().map(CString::new).transpose(),
        );
        if let (Ok(name), Ok(kind), Ok(owner), Ok(reason), Ok(permit_id)) = strings {
            let ev = rlock_lost_event {
                name: name.as_ptr(),
                kind: kind.as_ptr(),
                owner: owner.as_ptr(),
                reason: reason.as_ptr(),
                permit_id: permit_id.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
            };
            // SAFETY: the callback contract is the caller's (see `rlock_lost_callback`); the
            // strings outlive the call.
            unsafe { (cb.f)(cb.userdata, &ev) };
        }
    }
}

/// The lost-hold listeners a handle added, by id; the handle removes what is left when freed.
#[derive(Default)]
pub(crate) struct HandleListeners(Mutex<Vec<ListenerId>>);

/// A listener calling C, boxed to be handed to any primitive's `on_lost`.
pub(crate) type CListener = Box<dyn Fn(&LostEvent) + Send + Sync>;

impl HandleListeners {
    /// `rlock_<primitive>_on_lost`: registers a listener calling `callback` through core's
    /// `register` (the primitive's `on_lost`), records it and writes its id to `out` (NULL:
    /// not wanted). A NULL callback is `RLOCK_INVALID_ARGUMENT`, and nothing is registered.
    pub(crate) fn add(
        &self,
        callback: rlock_lost_callback,
        userdata: *mut c_void,
        out: *mut u64,
        register: impl FnOnce(CListener) -> ListenerId,
    ) -> Result<(), Failure> {
        let f = callback.ok_or_else(|| Failure::invalid("callback is NULL"))?;
        let id = register(Box::new(listener(f, userdata)));
        self.ids().push(id);
        write_out(out, id.into_raw());
        Ok(())
    }

    /// `rlock_<primitive>_remove_lost_listener`: removes listener `id` through core's `remove`
    /// when this handle added it; whether it was there.
    pub(crate) fn remove(&self, id: u64, remove: impl FnOnce(ListenerId) -> bool) -> bool {
        let taken = {
            let mut ids = self.ids();
            ids.iter().position(|l| l.into_raw() == id).map(|i| ids.swap_remove(i))
        };
        taken.is_some_and(remove)
    }

    /// Removes every listener still registered (the handle's drop).
    pub(crate) fn remove_all(&self, remove: impl Fn(ListenerId) -> bool) {
        for id in std::mem::take(&mut *self.ids()) {
            remove(id);
        }
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, Vec<ListenerId>> {
        // Every critical section leaves the list whole, so a poisoned mutex is still usable.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
