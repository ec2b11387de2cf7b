//! The Rust worker of `make demo`: takes the lock `demo:lock` N times and, inside each critical
//! section, increments the non-atomic counter `demo:counter` (GET, then SET).
//!
//! Usage: `worker <label> <iterations>`; Redis URL from `REDIS_URL`.
#![allow(clippy::print_stdout)]

use redis::AsyncCommands;
use rlock::{Client, ClientOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let label = args.next().unwrap_or_else(|| "rust".into());
    let iterations: u32 = args.next().map_or(Ok(100), |s| s.parse())?;
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());

    let client = Client::connect(&url, ClientOptions::default()).await?;
    let mut data = redis::Client::open(url.as_str())?.get_multiplexed_async_connection().await?;
    let lock = client.lock("demo:lock")?;
    let me = client.new_owner();
    let mut handoffs = 0;
    for _ in 0..iterations {
        lock.acquire(&me).await?;
        let n: Option<u64> = data.get("demo:counter").await?;
        let n = n.unwrap_or(0) + 1;
        let last: Option<String> = data.get("demo:last").await?;
        let () = data.set("demo:counter", n).await?;
        let () = data.set("demo:last", &label).await?;
        lock.release(&me).await?;
        if let Some(prev) = last.filter(|p| *p != label) {
            handoffs += 1;
            if handoffs <= 3 {
                println!("[{label}] got the lock from {prev}, counter = {n}");
            }
        }
    }
    println!("[{label}] done: {iterations} critical sections, {handoffs} hand-offs from other workers");
    client.close();
    Ok(())
}
