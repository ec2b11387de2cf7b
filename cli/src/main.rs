//! The `rlock` command: everything is in the library ([`rlock_cli::main`]).

fn main() -> std::process::ExitCode {
    rlock_cli::main()
}
