//! A lean HTTP/1 client for flat-out loads: one kept-alive connection, hyper's own (no pool,
//! no URL parsed per request), so that the clients' share of the machine's two cores stays
//! small beside the gateway's they measure.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{SendRequest, handshake};
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use airlock_tests::gateway::Gateway;

/// One connection to a gateway.
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    /// The `Host` header of every request, checked once.
    host: HeaderValue,
}

impl Conn {
    /// Connects to `gw`.
    pub async fn open(gw: &Gateway) -> Conn {
        let host = gw.base.trim_start_matches("http://").to_owned();
        let stream = TcpStream::connect(&host).await.expect("the gateway listens");
        stream.set_nodelay(true).expect("TCP_NODELAY is set");
        let (sender, connection) =
            handshake(TokioIo::new(stream)).await.expect("an HTTP/1 connection");
        // Driven until the sender is dropped or the gateway closes it.
        tokio::spawn(connection);
        let host = HeaderValue::from_str(&host).expect("an address is a valid Host");
        Conn { sender, host }
    }

    /// POSTs the JSON `body` to `path` and reads the whole answer; answers its status.
    pub async fn post(&mut self, path: &Uri, body: &Bytes) -> StatusCode {
        let request = Request::builder()
            .method(Method::POST)
            .uri(path.clone())
            .header(HOST, self.host.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(Full::new(body.clone()))
            .expect("a well-formed request");
        self.sender.ready().await.expect("the connection is open");
        let response = self.sender.send_request(request).await.expect("the gateway answers");
        let status = response.status();
        response.into_body().collect().await.expect("the whole answer is read");
        status
    }
}
