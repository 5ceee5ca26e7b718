//! A stand-in for the Anthropic Messages API: a real HTTP/1.1 server on loopback that answers
//! from a script and records every request it receives, so tests can count them.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Wait this long before answering.
    pub delay: Duration,
    /// Send only this many bytes of the body, then close the connection.
    pub cut_at: Option<usize>,
}

impl Reply {
    /// A 200 with a Messages API body whose text is `summary`.
    /// The body is `tests/fixtures/anthropic-message.json`, the one the e2e stand-in gives too.
    pub fn summary(summary: &str) -> Self {
        let mut body: serde_json::Value =
            serde_json::from_str(include_str!("../fixtures/anthropic-message.json"))
                .expect("the stand-in's message is JSON");
        body["content"][0]["text"] = summary.into();
        Self::status(200, &body.to_string())
    }

    pub fn status(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
            delay: Duration::ZERO,
            cut_at: None,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn cut_at(mut self, bytes: usize) -> Self {
        self.cut_at = Some(bytes);
        self
    }

    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A request as received.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    /// Answered when the script runs out.
    fallback: Option<Reply>,
    received: Vec<Received>,
}

/// The running stand-in. It stops when the test process ends.
pub struct StandIn {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl StandIn {
    /// Starts answering `script` in order, then `fallback` for ever.
    pub fn start(script: Vec<Reply>, fallback: Option<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("address");
        let state = Arc::new(Mutex::new(State {
            script: script.into(),
            fallback,
            received: Vec::new(),
        }));
        let shared = Arc::clone(&state);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                thread::spawn(move || serve(stream, &state));
            }
        });
        Self { addr, state }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    pub fn count(&self) -> usize {
        self.state.lock().unwrap().received.len()
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or("").to_owned(),
            parts.next().unwrap_or("").to_owned(),
        );
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.push((name.trim().to_owned(), value.trim().to_owned()));
            }
        }
        let length = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let reply = {
            let mut state = state.lock().unwrap();
            state.received.push(Received {
                method,
                path,
                headers,
                body: String::from_utf8_lossy(&body).into_owned(),
            });
            let next = state.script.pop_front();
            next.or_else(|| state.fallback.clone()).unwrap_or_else(|| {
                Reply::status(500, "{\"error\":{\"message\":\"script exhausted\"}}")
            })
        };
        thread::sleep(reply.delay);
        let mut response = format!(
            "HTTP/1.1 {} Stand-in\r\ncontent-length: {}\r\n",
            reply.status,
            reply.body.len()
        );
        for (name, value) in &reply.headers {
            response.push_str(&format!("{name}: {value}\r\n"));
        }
        response.push_str("\r\n");
        let body = reply.body.as_bytes();
        let sent = &body[..reply.cut_at.unwrap_or(body.len()).min(body.len())];
        if writer
            .write_all(response.as_bytes())
            .and_then(|()| writer.write_all(sent))
            .is_err()
            || reply.cut_at.is_some()
        {
            return;
        }
    }
}
