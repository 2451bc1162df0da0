//! The connections the HTTP server holds: at most
//! [`MAX_CONNECTIONS`](crate::http::MAX_CONNECTIONS), a write deadline on
//! each, and room always made for a new one.
//!
//! A client can hold a connection without letting it make progress: by
//! sending its request headers a byte at a time (slowloris), or by
//! pipelining requests and never reading the answers, so that every write
//! waits on a full socket buffer. If the server waited for a free slot
//! before accepting, such clients would keep the kubelet's `/healthz` probe
//! in the listen backlog until they gave up. So a new connection is always
//! accepted, and at the cap the connection that has gone longest without a
//! complete request is closed to make room (a probe sends its request at
//! once; a stalled client never completes one). A write that makes no
//! progress for [`WRITE_TIMEOUT`] closes its connection whatever the load.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::{Instant, Sleep};

/// How long one write to a client may wait for room in its socket before
/// the connection is closed: far above what a reading client needs for
/// the largest answer (a few hundred KiB of metrics).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// The open connections, each with when it last completed a request.
pub(crate) struct Connections {
    cap: usize,
    start: Instant,
    next: AtomicU64,
    open: Mutex<HashMap<u64, Held>>,
}

struct Held {
    last_request: Arc<AtomicU64>,
    close: Arc<Notify>,
}

/// One admitted connection: leaves the set when dropped.
pub(crate) struct Admitted {
    id: u64,
    connections: Arc<Connections>,
    last_request: Arc<AtomicU64>,
    close: Arc<Notify>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Connections {
    /// A set of at most `cap` connections.
    pub(crate) fn new(cap: usize) -> Arc<Connections> {
        Arc::new(Connections {
            cap: cap.max(1),
            start: Instant::now(),
            next: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Admits a new connection, closing the one that has gone longest
    /// without a complete request when the set is full.
    pub(crate) fn admit(self: &Arc<Connections>) -> Admitted {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let last_request = Arc::new(AtomicU64::new(self.now()));
        let close = Arc::new(Notify::new());
        let mut open = lock(&self.open);
        while open.len() >= self.cap {
            let Some(stalest) = open
                .iter()
                .min_by_key(|(id, held)| (held.last_request.load(Ordering::Relaxed), **id))
                .map(|(id, _)| *id)
            else {
                break;
            };
            if let Some(held) = open.remove(&stalest) {
                // Stored if the connection's task is not waiting yet.
                held.close.notify_one();
            }
        }
        open.insert(
            id,
            Held {
                last_request: Arc::clone(&last_request),
                close: Arc::clone(&close),
            },
        );
        Admitted {
            id,
            connections: Arc::clone(self),
            last_request,
            close,
        }
    }

    /// How many connections are open.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.open).len()
    }
}

impl Admitted {
    /// Notes that a complete request arrived on this connection.
    pub(crate) fn requested(&self) {
        self.last_request
            .store(self.connections.now(), Ordering::Relaxed);
    }

    /// Completes when the connection must be closed to make room.
    pub(crate) async fn evicted(&self) {
        self.close.notified().await;
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        lock(&self.connections.open).remove(&self.id);
    }
}

/// A stream whose writes fail with [`io::ErrorKind::TimedOut`] once one has
/// waited [`WRITE_TIMEOUT`] for room.
pub(crate) struct WriteDeadline<S> {
    inner: S,
    timeout: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteDeadline<S> {
    pub(crate) fn new(inner: S, timeout: Duration) -> WriteDeadline<S> {
        WriteDeadline {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// Turns a write that is not ready into a timeout once it has waited
    /// too long; a ready one clears the wait.
    fn watch<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let timeout = self.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client did not read its answer in time",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(cx, poll)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(cx, poll)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn at_the_cap_the_connection_longest_without_a_request_makes_room() {
        let connections = Connections::new(2);
        let first = connections.admit();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let second = connections.admit();
        tokio::time::sleep(Duration::from_millis(5)).await;
        // The first completes a request: the second is now the stalest.
        first.requested();
        let third = connections.admit();
        assert_eq!(connections.len(), 2);
        tokio::time::timeout(Duration::from_secs(1), second.evicted())
            .await
            .expect("the stalest connection is told to close");
        assert!(
            tokio::time::timeout(Duration::from_millis(50), first.evicted())
                .await
                .is_err()
        );
        drop(third);
        assert_eq!(connections.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_the_client_never_reads_times_out() {
        use tokio::io::AsyncWriteExt;

        // The client end is never read: the pipe holds 64 bytes.
        let (server, _client) = tokio::io::duplex(64);
        let mut server = WriteDeadline::new(server, WRITE_TIMEOUT);
        let started = Instant::now();
        let written = server.write_all(&[b'x'; 4096]).await;
        let err = written.expect_err("the write cannot finish");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), WRITE_TIMEOUT);
        // A client that reads is never cut, however long the whole answer.
        let (server, mut client) = tokio::io::duplex(64);
        let mut server = WriteDeadline::new(server, WRITE_TIMEOUT);
        let reader = tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut all = Vec::new();
            client.read_to_end(&mut all).await.map(|_| all.len())
        });
        for _ in 0..64 {
            server.write_all(&[b'y'; 64]).await.unwrap();
            tokio::time::sleep(WRITE_TIMEOUT / 2).await;
        }
        server.shutdown().await.unwrap();
        drop(server);
        assert_eq!(reader.await.unwrap().unwrap(), 64 * 64);
    }
}
