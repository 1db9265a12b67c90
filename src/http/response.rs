//! Responses on the wire: status line, headers and body formatted into one buffer, written
//! with one `write_all`.
//!
//! Invariants: one write per response (two writes stall 40 ms on delayed ACK); the buffer is
//! sized once and wiped on drop, because the `connect` answer carries secrets.

use std::fmt::Write as _;

use zeroize::Zeroizing;

use crate::http::Reply;

/// What the response says about the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// HTTP/1.1 keeps the connection by default: nothing to say.
    KeepAlive,
    /// An HTTP/1.0 client asked to keep the connection: say that we do.
    KeepAliveHttp10,
    /// The connection closes after this response: `Connection: close`.
    Close,
}

/// The interim answer to `Expect: 100-continue`, sent when the body will be read.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The whole response in one buffer.
pub fn format(reply: &Reply, framing: Framing) -> Zeroizing<Vec<u8>> {
    format_with_body(reply, framing, true)
}

/// The response to a `HEAD` request: the same headers (and length), no body.
pub fn format_head_only(reply: &Reply, framing: Framing) -> Zeroizing<Vec<u8>> {
    format_with_body(reply, framing, false)
}

fn format_with_body(reply: &Reply, framing: Framing, with_body: bool) -> Zeroizing<Vec<u8>> {
    let mut head = String::with_capacity(256);
    // Writing into a String cannot fail.
    let _ = write!(
        head,
        "HTTP/1.1 {} {}\r\n",
        reply.status,
        reason_phrase(reply.status)
    );
    let has_body = reply.status != 204 && reply.status != 304;
    if has_body {
        let _ = write!(
            head,
            "Content-Type: {}\r\nContent-Length: {}\r\n",
            reply.content_type,
            reply.body.len()
        );
    }
    for (name, value) in &reply.headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    match framing {
        Framing::KeepAlive => {}
        Framing::KeepAliveHttp10 => head.push_str("Connection: keep-alive\r\n"),
        Framing::Close => head.push_str("Connection: close\r\n"),
    }
    head.push_str("\r\n");
    let body: &[u8] = match with_body && has_body {
        true => &reply.body,
        false => &[],
    };
    let mut bytes = Zeroizing::new(Vec::with_capacity(head.len() + body.len()));
    bytes.extend_from_slice(head.as_bytes());
    bytes.extend_from_slice(body);
    bytes
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        507 => "Insufficient Storage",
        _ => "Status",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use zeroize::Zeroizing;

    use crate::http::response::{format, format_head_only, Framing};
    use crate::http::Reply;

    fn text(bytes: &[u8]) -> String {
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn response_is_one_buffer_with_length_and_type() {
        let reply = Reply {
            status: 200,
            content_type: crate::http::JSON,
            headers: vec![("Allow", "GET".into())],
            body: Zeroizing::new(b"{}".to_vec()),
        };
        assert_eq!(
            text(&format(&reply, Framing::KeepAlive)),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nAllow: GET\r\n\r\n{}"
        );
    }

    #[test]
    fn closing_response_says_connection_close_and_http_1_0_keep_alive_says_keep_alive() {
        let reply = Reply::no_content();
        assert_eq!(
            text(&format(&reply, Framing::Close)),
            "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(
            text(&format(&reply, Framing::KeepAliveHttp10)),
            "HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\r\n"
        );
    }

    #[test]
    fn text_reply_carries_its_own_content_type() {
        let bytes = format(&Reply::text("Host a\n".into()), Framing::KeepAlive);
        assert!(
            text(&bytes)
                .starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"),
            "{}",
            text(&bytes)
        );
    }

    #[test]
    fn no_content_has_no_body_and_no_type() {
        assert_eq!(
            text(&format(&Reply::no_content(), Framing::KeepAlive)),
            "HTTP/1.1 204 No Content\r\n\r\n"
        );
    }

    #[test]
    fn head_keeps_the_length_but_sends_no_body() {
        let reply = Reply {
            status: 405,
            content_type: crate::http::JSON,
            headers: vec![],
            body: Zeroizing::new(b"{\"a\":1}".to_vec()),
        };
        let head = text(&format_head_only(&reply, Framing::KeepAlive));
        assert!(head.ends_with("Content-Length: 7\r\n\r\n"), "{head}");
    }
}
