//! The reader's side: requests in on standard input (a socket), answers
//! out on the same socket, until the process that started it goes away.

use std::cell::RefCell;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

use crate::reader::request::Received;
use crate::reader::wire;

/// Serves requests and returns the exit status: 0 at the end of the
/// input, 2 when the input is not a socket or holds a malformed request.
pub(super) fn serve() -> i32 {
    let Ok(input) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return 2;
    };
    let mut socket = UnixStream::from(input);
    let trees = RefCell::new(None);
    loop {
        let message = match wire::receive(&mut socket) {
            Ok(Some(message)) => message,
            Ok(None) => return 0,
            Err(_) => return 2,
        };
        let Ok(request) = Received::decode(&message) else {
            return 2;
        };
        if wire::send(&mut socket, &request.answer(&trees)).is_err() {
            // The process that asked is gone.
            return 0;
        }
    }
}
