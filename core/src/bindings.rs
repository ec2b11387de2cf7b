//! What the surfaces (the C ABI, the Python and Node bindings) would otherwise each write the
//! same way: a permit acquire with an optional wait, a lost-hold event as the Python and Node
//! callbacks receive it, `describe` and `list` as JSON text in their spelling, and the option
//! names they spell. Exposed through `rlock::surface`.

use std::time::Duration;

use crate::client::Client;
use crate::error::Result;
use crate::options::{Surface, OPTIONS};
use crate::permit_semaphore::{Permit, PermitExpirableSemaphore};
use crate::spelling::to_json_for;
use crate::watchdog::LostEvent;

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
