//! zerohop's Kubernetes client, shared by the agent, `fleet` and
//! `validate run`: a client whose every call has a deadline and whose
//! responses have a size cap, errors that keep the server's status, the
//! back-off between retries and the durations people write on a command
//! line. Kept apart so that the commands that talk to a cluster depend on
//! it and not on each other.

pub mod api;
pub mod backoff;
pub mod duration;
