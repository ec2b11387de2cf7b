//! What the surfaces (the C ABI, the Python and Node bindings) would otherwise each write the
//! same way: each acquire finished (the hold, or core's one "not acquired" error naming what
//! was waited for), a permit acquire with an optional wait, a lost-hold event as the Python and
//! Node callbacks receive it, `describe` and `list` as JSON text in their spelling, and the
//! option names they spell. Exposed through `rlock::surface`.

use std::time::Duration;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::lock::{Guard, Lock};
use crate::multi_lock::{MultiGuard, MultiLock};
use crate::options::{Surface, OPTIONS};
use crate::owner::Owner;
use crate::permit_semaphore::{Permit, PermitExpirableSemaphore};
use crate::red_lock::{RedGuard, RedLock};
use crate::semaphore::{Permits, Semaphore};
use crate::spelling::to_json_for;
use crate::watchdog::LostEvent;

/// What an acquire with `wait` took, or core's one `NotAcquired` error ([`Error::not_acquired`])
/// naming `what` was waited for, so every surface says it in the same words.
fn held<T>(got: Option<T>, what: impl FnOnce() -> String, wait: Option<Duration>) -> Result<T> {
    got.ok_or_else(|| Error::not_acquired(what(), wait))
}

/// `owner`'s hold of `lock` ([`Lock::acquire_guard`]: `wait` `None` waits as long as it takes,
/// `lease` `None` uses the watchdog), or `NotAcquired` ("lock 'NAME' was not acquired within N
/// ms") when the wait ran out. Fails as `acquire_guard` does.
pub async fn lock_held(
    lock: &Lock,
    owner: &Owner,
    wait: Option<Duration>,
    lease: Option<Duration>,
) -> Result<Guard> {
    held(lock.acquire_guard(owner, wait, lease).await?, || format!("lock '{}'", lock.name()), wait)
}

/// `permits` of `sem` ([`Semaphore::acquire_guard`]), or `NotAcquired` ("N permit(s) of
/// semaphore 'NAME' ...") when the wait ran out, with nothing taken.
pub async fn permits_held(sem: &Semaphore, permits: u64, wait: Option<Duration>) -> Result<Permits> {
    let got = sem.acquire_guard(permits, wait).await?;
    held(got, || format!("{permits} permit(s) of semaphore '{}'", sem.name()), wait)
}

/// `owner`'s hold of every member of `multi` ([`MultiLock::acquire_guard`]), or `NotAcquired`
/// ("the multi-lock of N members ...") when the wait ran out, with nothing held.
pub async fn multi_lock_held(
    multi: &MultiLock,
    owner: &Owner,
    wait: Option<Duration>,
    lease: Option<Duration>,
) -> Result<MultiGuard> {
    let got = multi.acquire_guard(owner, wait, lease).await?;
    held(got, || format!("the multi-lock of {} members", multi.members().len()), wait)
}

/// `owner`'s hold of `red` on a majority ([`RedLock::acquire_guard`]), or `NotAcquired`
/// ("RedLock 'NAME' ...") when the wait ran out, with nothing held.
pub async fn red_lock_held(
    red: &RedLock,
    owner: &Owner,
    wait: Option<Duration>,
    lease: Option<Duration>,
) -> Result<RedGuard> {
    held(red.acquire_guard(owner, wait, lease).await?, || format!("RedLock '{}'", red.name()), wait)
}

/// A permit of `sem` ([`acquire_permit`]), or `NotAcquired` ("a permit of semaphore 'NAME'
/// ...") when the wait ran out, with nothing taken.
pub async fn permit_held(
    sem: &PermitExpirableSemaphore,
    wait: Option<Duration>,
    lease: Option<Duration>,
) -> Result<Permit> {
    held(acquire_permit(sem, wait, lease).await?, || sem.what(), wait)
}

/// A permit of `sem` for `lease` (None: the watchdog renews it), waiting as long as it takes
/// ([`PermitExpirableSemaphore::acquire`]) when `wait` is None, else at most `wait`
/// ([`PermitExpirableSemaphore::try_acquire`]; None when the wait ran out). Fails as they do.
pub async fn acquire_permit(
    sem: &PermitExpirableSemaphore,
    wait: Option<Duration>,
    lease: Option<Duration>,
) -> Result<Option<Permit>> {
    match wait {
        Some(w) => sem.try_acquire(w, lease).await,
        None => sem.acquire(lease).await.map(Some),
    }
}

/// A lost-hold callback's arguments, in order: the name, the kind of hold (`"lock"`, `"read"`,
/// `"write"`, `"permit"`, ...), the owner as stored in Redis, the reason (`"gone"`, ...) and
/// the permit id (`None` except for a permit).
pub type LostArgs = (String, &'static str, String, &'static str, Option<String>);

/// The callback arguments of `event` ([`LostArgs`]).
pub fn lost_args(event: &LostEvent) -> LostArgs {
    (
        event.name.to_string(),
        event.kind,
        event.owner.as_str().to_owned(),
        event.reason.as_str(),
        event.permit_id.as_deref().map(str::to_owned),
    )
}

/// What lives under `name` ([`Client::describe`]), as JSON text in `surface`'s spelling.
/// Fails as `describe` does.
pub async fn describe_json(client: &Client, surface: Surface, name: &str) -> Result<String> {
    Ok(to_json_for(surface, &client.describe(name).await?))
}

/// The names matching `pattern` ([`Client::list`]; at most `limit`), as JSON text in
/// `surface`'s spelling. Fails as `list` does.
pub async fn list_json(
    client: &Client,
    surface: Surface,
    pattern: Option<&str>,
    limit: Option<usize>,
) -> Result<String> {
    Ok(to_json_for(surface, &client.list(pattern, limit).await?))
}

/// The name of every client option, in `surface`'s spelling.
pub fn option_names(surface: Surface) -> Vec<String> {
    OPTIONS.iter().map(|o| o.spelling(surface)).collect()
}

/// Makes now every value core makes once per process on first use: the scripts' SHA1 digests
/// and the link stall clock's start. A `fork()` while another thread was making one would copy
/// its once-cell half filled, and the child's first use would wait for good; a binding whose
/// users fork (Python) calls this when it is loaded. Idempotent and cheap after the first call;
/// it cannot fail.
pub fn make_once_values() {
    crate::scripts::make_all();
    crate::conn::local::start_clock();
}
