//! A minimal in-process HTTP/1.1 server for tests: one request per connection, answered by a
//! closure, every request recorded. It can cut a body short, which real servers cannot be
//! asked to do.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::retry::Timing;
use super::{FetchOptions, HttpFetcher};

/// A request as received.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
}

impl Request {
    /// The value of header `name` (case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// `N` of a `Range: bytes=N-` header.
    pub(crate) fn range_start(&self) -> Option<u64> {
        self.header("range")?
            .strip_prefix("bytes=")?
            .strip_suffix('-')?
            .parse()
            .ok()
    }
}

/// A response to send.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    cut_after: Option<usize>,
    stall: bool,
}

impl Reply {
    pub(crate) fn status(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            cut_after: None,
            stall: false,
        }
    }

    pub(crate) fn ok(body: impl Into<Vec<u8>>) -> Self {
        Self {
            body: body.into(),
            ..Self::status(200)
        }
    }

    /// `body` the way a static file server serves it: honouring `Range: bytes=N-`.
    pub(crate) fn file(body: &[u8], request: &Request) -> Self {
        match request.range_start() {
            Some(start) if (start as usize) < body.len() => {
                let range = format!("bytes {start}-{}/{}", body.len() - 1, body.len());
                Self {
                    body: body[start as usize..].to_vec(),
                    ..Self::status(206)
                }
                .header("Content-Range", &range)
            }
            Some(_) => {
                Self::status(416).header("Content-Range", &format!("bytes */{}", body.len()))
            }
            None => Self::ok(body),
        }
    }

    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Announces the whole body but sends only its first `bytes`, then closes.
    pub(crate) fn cut_after(mut self, bytes: usize) -> Self {
        self.cut_after = Some(bytes);
        self
    }

    /// Announces the whole body but sends only its first `bytes`, then neither sends more nor
    /// closes: a client waiting for the rest waits until its timeout.
    pub(crate) fn stall_after(mut self, bytes: usize) -> Self {
        self.cut_after = Some(bytes);
        self.stall = true;
        self
    }
}

type Handler = dyn Fn(&Request, usize) -> Reply + Send + Sync;

/// A running test server; stops when dropped.
pub(crate) struct TestServer {
    port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    task: JoinHandle<()>,
}

impl TestServer {
    /// Starts a server answering each request with `handler(request, number)`, numbering
    /// requests from 0.
    pub(crate) async fn start(
        handler: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let log = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&handler), Arc::clone(&log)));
            }
        });
        Self {
            port,
            requests,
            task,
        }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.host())
    }

    /// `127.0.0.1:<port>`.
    pub(crate) fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The requests received so far.
    pub(crate) fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, handler: Arc<Handler>, log: Arc<Mutex<Vec<Request>>>) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let reply = {
        let mut log = log.lock().unwrap();
        log.push(request.clone());
        handler(&request, log.len() - 1)
    };
    let mut head = format!("HTTP/1.1 {} X\r\n", reply.status);
    for (name, value) in &reply.headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    let length = reply.body.len();
    let _ = write!(
        head,
        "Content-Length: {length}\r\nConnection: close\r\n\r\n"
    );
    let body = &reply.body[..reply.cut_after.unwrap_or(reply.body.len())];
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body).await;
    if reply.stall {
        let _ = stream.flush().await;
        std::future::pending::<()>().await;
    }
    let _ = stream.shutdown().await;
}

async fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut buffer = Vec::new();
    while !buffer.windows(4).any(|window| window == b"\r\n\r\n") {
        let mut chunk = [0; 1024];
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let text = String::from_utf8_lossy(&buffer);
    let mut lines = text.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
    let headers = lines
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    Some(Request { path, headers })
}

/// A fetcher that waits (almost) nothing between retries.
pub(crate) fn fetcher(options: FetchOptions) -> HttpFetcher {
    let timing = Timing {
        backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(2),
        max_retry_after: Duration::from_millis(5),
        ..Timing::default()
    };
    HttpFetcher::with_timing(options, timing).unwrap()
}

/// [`fetcher`] with `retries` retries and nothing else.
pub(crate) fn retrying(retries: u32) -> HttpFetcher {
    fetcher(FetchOptions {
        retries,
        ..FetchOptions::default()
    })
}
