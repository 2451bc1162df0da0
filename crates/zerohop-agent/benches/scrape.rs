//! Scrape latency of a running agent, measured from a second process.
//!
//! Start the agent (for example on the large synthetic host of the doctor's
//! `full_pass` bench, with a short `--interval` so that passes run during
//! the scrapes), then:
//!
//! ```sh
//! ZEROHOP_SCRAPE_ADDR=127.0.0.1:9477 cargo bench -p zerohop-agent --bench scrape
//! ```
//!
//! It sends `ZEROHOP_SCRAPES` (10,000 by default) `GET /metrics` requests as
//! Prometheus does (OpenMetrics `Accept`, one kept-alive connection), one
//! after the other with `ZEROHOP_SCRAPE_GAP_US` microseconds between them
//! (0 by default; a gap spreads the scrapes over several passes), and
//! prints the median, the 99th percentile and the slowest answer, and the
//! size of the body.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// One request on `stream`; returns the body's length.
fn scrape(reader: &mut BufReader<TcpStream>) -> usize {
    write!(
        reader.get_mut(),
        "GET /metrics HTTP/1.1\r\nHost: bench\r\nAccept: {ACCEPT}\r\n\r\n"
    )
    .expect("the request is sent");
    let mut length = 0;
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("a header line");
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().expect("a length");
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("the body");
    length
}

fn main() {
    let address = std::env::var("ZEROHOP_SCRAPE_ADDR").unwrap_or_else(|_| {
        eprintln!(
            "set ZEROHOP_SCRAPE_ADDR to a running agent's address (host:port); nothing measured"
        );
        std::process::exit(0);
    });
    let scrapes: usize = std::env::var("ZEROHOP_SCRAPES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let stream = TcpStream::connect(&address).expect("the agent listens");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("a timeout");
    stream.set_nodelay(true).expect("no delay");
    let mut reader = BufReader::new(stream);
    let gap = Duration::from_micros(
        std::env::var("ZEROHOP_SCRAPE_GAP_US")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
    );
    let mut samples = Vec::with_capacity(scrapes);
    let mut bytes = 0;
    for _ in 0..scrapes {
        let started = Instant::now();
        bytes = scrape(&mut reader);
        samples.push(started.elapsed());
        std::thread::sleep(gap);
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "{scrapes} scrapes of {bytes} bytes: median {:?}, p99 {:?}, max {:?}",
        at(0.5),
        at(0.99),
        samples[samples.len() - 1]
    );
}
