//! Reading one request: its head into a bounded buffer, parsed by httparse; its framing
//! decided from the head alone; its body through the size limit.
//!
//! Invariants: the connection's buffer never grows past `BUFFER_BYTES` (allocated once, wiped
//! on drop, since heads carry tokens and bodies passwords); every read has a deadline; the
//! framing is one `Content-Length` of digits or `Transfer-Encoding: chunked` alone, never
//! both and never a guess; a body over its route's limit (`MAX_BODY_BYTES` unless the handler says otherwise) is refused from its declared length
//! before a byte of it is read, or, when chunked, as soon as it passes the limit.

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::Instant;

use zeroize::Zeroizing;

use crate::http::{HttpError, MAX_HEADERS, MAX_HEADER_SECTION_BYTES, MAX_REQUEST_LINE_BYTES};

/// The connection's buffer: room for the largest head the limits allow (request line, its
/// line end, header section). Bytes past a head (a body, a pipelined request) wait here.
const BUFFER_BYTES: usize = MAX_REQUEST_LINE_BYTES + 2 + MAX_HEADER_SECTION_BYTES;

/// What a connection's buffer starts with: room for every ordinary request head. Only a
/// longer head moves it to `BUFFER_BYTES`, so a thousand idle connections cost kilobytes each.
const FIRST_BUFFER_BYTES: usize = 8 * 1024;

/// The most bytes one read takes: the unfilled part of the buffer is zeroed before each read,
/// so this bounds that cost for small requests.
const READ_CHUNK_BYTES: usize = 16 * 1024;

/// The longest chunk-size line (size and extensions) of a chunked body.
const MAX_CHUNK_LINE_BYTES: usize = 1024;

/// Why reading stopped.
#[derive(Debug)]
pub enum ReadError {
    /// The client closed, or the connection was closed from outside (cap, shutdown).
    Closed,
    /// The deadline passed.
    TimedOut,
    /// The request is malformed or over a limit: answer this and close.
    Refused(HttpError),
}

impl From<HttpError> for ReadError {
    fn from(err: HttpError) -> ReadError {
        ReadError::Refused(err)
    }
}

/// Bytes read from one connection and not yet used.
pub struct Buffer {
    bytes: Zeroizing<Vec<u8>>,
}

impl Default for Buffer {
    fn default() -> Buffer {
        Buffer {
            bytes: Zeroizing::new(Vec::with_capacity(FIRST_BUFFER_BYTES)),
        }
    }
}

impl Buffer {
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn data(&self) -> &[u8] {
        &self.bytes
    }

    /// Drops the first `count` bytes (a head or body that has been used).
    pub fn consume(&mut self, count: usize) {
        let count = count.min(self.bytes.len());
        self.bytes.drain(..count);
    }

    /// Reads at least one byte from `stream` before `deadline`, never past the capacity.
    pub fn fill(&mut self, stream: &TcpStream, deadline: Instant) -> Result<(), ReadError> {
        if self.bytes.len() == self.bytes.capacity() && self.bytes.capacity() < BUFFER_BYTES {
            self.grow();
        }
        let room = self.bytes.capacity().min(BUFFER_BYTES) - self.bytes.len();
        // Only a line longer than the head limits can fill the buffer (the head checks
        // refuse them before that; a trailer line is refused here).
        if room == 0 {
            return Err(ReadError::Refused(HttpError::HeadersTooLarge));
        }
        let start = self.bytes.len();
        self.bytes.resize(start + room.min(READ_CHUNK_BYTES), 0);
        let read = read_before(stream, &mut self.bytes[start..], deadline);
        let count = *read.as_ref().unwrap_or(&0);
        self.bytes.truncate(start + count);
        match read {
            Ok(0) => Err(ReadError::Closed),
            Ok(_) => Ok(()),
            Err(err) => Err(err),
        }
    }
}

impl Buffer {
    /// Moves the bytes to a buffer of the full size. Done by hand, not by `Vec` growth: the
    /// old buffer is wiped when it drops, where a reallocation would leave its bytes behind.
    fn grow(&mut self) {
        let mut bigger = Zeroizing::new(Vec::with_capacity(BUFFER_BYTES));
        bigger.extend_from_slice(&self.bytes);
        self.bytes = bigger;
    }
}

/// Reads until the buffer starts with a whole request head; returns the head's length.
/// The caller has waited for the first byte; the head must be complete before `deadline`.
pub fn read_head(
    stream: &TcpStream,
    buffer: &mut Buffer,
    deadline: Instant,
) -> Result<usize, ReadError> {
    loop {
        if let Some(length) = complete_head(buffer.data())? {
            return Ok(length);
        }
        match buffer.fill(stream, deadline) {
            Err(ReadError::TimedOut) => return Err(HttpError::RequestTimeout.into()),
            other => other?,
        }
    }
}

/// `Some(length)` when `data` starts with a complete head within the limits, `None` when
/// more bytes are needed, an error when a limit is passed or the head is malformed.
pub fn complete_head(data: &[u8]) -> Result<Option<usize>, HttpError> {
    // Empty lines before a request line are allowed (RFC 9112 §2.2) and not part of it.
    let leading = data
        .iter()
        .take_while(|byte| matches!(byte, b'\r' | b'\n'))
        .count();
    // They count toward the request line's limit, so a flood of them is refused too.
    let line_end = data[leading..].iter().position(|byte| *byte == b'\n');
    let line_length = leading
        + match line_end {
            Some(position) if position > 0 && data[leading + position - 1] == b'\r' => position - 1,
            Some(position) => position,
            // No line end yet: the line is at least what has arrived, less a final `\r`.
            None => (data.len() - leading).saturating_sub(1),
        };
    if line_length > MAX_REQUEST_LINE_BYTES {
        return Err(HttpError::UriTooLong);
    }
    let Some(line_end) = line_end else {
        return Ok(None);
    };
    let section_start = leading + line_end + 1;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let status = match request.parse(data) {
        Ok(status) => status,
        Err(httparse::Error::TooManyHeaders) => return Err(HttpError::HeadersTooLarge),
        Err(err) => return Err(malformed(err)),
    };
    let head_end = match status {
        httparse::Status::Complete(length) => Some(length),
        httparse::Status::Partial => None,
    };
    let section_length = head_end.unwrap_or(data.len()) - section_start.min(data.len());
    if section_length > MAX_HEADER_SECTION_BYTES {
        return Err(HttpError::HeadersTooLarge);
    }
    Ok(head_end)
}

/// The parts of a request head the connection needs after the head's bytes are gone.
pub struct Head {
    pub method: String,
    /// Path and query as sent.
    pub target: String,
    pub http_1_0: bool,
    /// The client asked to keep the connection after this request.
    pub keep_alive: bool,
    pub body: BodyFraming,
    /// `Expect: 100-continue` was sent.
    pub expects_continue: bool,
}

/// How the body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFraming {
    None,
    Length(usize),
    /// Chunked, read through this limit.
    Chunked(usize),
}

impl BodyFraming {
    /// The most bytes the body can hold in memory: its declared length, or, when chunked,
    /// the limit (its buffer is reserved whole).
    pub fn reserved_bytes(self) -> usize {
        match self {
            BodyFraming::None => 0,
            BodyFraming::Length(length) => length,
            BodyFraming::Chunked(limit) => limit,
        }
    }
}

/// Parses a complete head (`data` holds it whole) and hands its headers to `inspect` while
/// they are still borrowed from the buffer, so values such as a token are never copied.
pub fn parse_head<T>(
    data: &[u8],
    body_limit: impl FnOnce(&str, &str) -> usize,
    inspect: impl FnOnce(&Head, &[httparse::Header<'_>]) -> T,
) -> Result<(Head, T), HttpError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(data) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(HttpError::BadRequest("incomplete request head".into()))
        }
        Err(httparse::Error::TooManyHeaders) => return Err(HttpError::HeadersTooLarge),
        Err(err) => return Err(malformed(err)),
    }
    let (Some(method), Some(target), Some(version)) =
        (request.method, request.path, request.version)
    else {
        return Err(HttpError::BadRequest("incomplete request line".into()));
    };
    let http_1_0 = version == 0;
    let connection_tokens = || {
        values(request.headers, "Connection")
            .flat_map(|value| value.split(','))
            .map(str::trim)
    };
    let keep_alive = match http_1_0 {
        true => connection_tokens().any(|token| token.eq_ignore_ascii_case("keep-alive")),
        false => !connection_tokens().any(|token| token.eq_ignore_ascii_case("close")),
    };
    let head = Head {
        method: method.to_owned(),
        target: target.to_owned(),
        http_1_0,
        keep_alive,
        body: body_framing(request.headers, body_limit(method, target))?,
        expects_continue: !http_1_0
            && values(request.headers, "Expect")
                .any(|value| value.trim().eq_ignore_ascii_case("100-continue")),
    };
    let inspected = inspect(&head, request.headers);
    Ok((head, inspected))
}

/// The values of every header named `name` (case-insensitive). A value that is not UTF-8
/// reads as U+FFFD, which no check accepts.
pub fn values<'a>(
    headers: &'a [httparse::Header<'a>],
    name: &'static str,
) -> impl Iterator<Item = &'a str> + 'a {
    headers
        .iter()
        .filter(move |header| header.name.eq_ignore_ascii_case(name))
        .map(|header| std::str::from_utf8(header.value).unwrap_or("\u{fffd}"))
}

/// Strict framing: one `Content-Length` of digits, or `Transfer-Encoding: chunked` alone;
/// anything else is refused, since a guess can desynchronize the connection (request
/// smuggling). A declared length over the limit is 413 before any read.
fn body_framing(headers: &[httparse::Header<'_>], limit: usize) -> Result<BodyFraming, HttpError> {
    let lengths: Vec<&str> = values(headers, "Content-Length").collect();
    let encodings: Vec<&str> = values(headers, "Transfer-Encoding").collect();
    match (lengths.as_slice(), encodings.as_slice()) {
        ([], []) => Ok(BodyFraming::None),
        ([], [encoding]) if encoding.trim().eq_ignore_ascii_case("chunked") => {
            Ok(BodyFraming::Chunked(limit))
        }
        ([], _) => Err(HttpError::BadRequest(
            "only Transfer-Encoding: chunked is supported".into(),
        )),
        ([_], [_, ..]) => Err(HttpError::BadRequest(
            "Content-Length and Transfer-Encoding together".into(),
        )),
        ([length], []) => {
            let length = length.trim();
            if length.is_empty() || !length.bytes().all(|byte| byte.is_ascii_digit()) {
                return Err(HttpError::BadRequest(
                    "Content-Length is not a number".into(),
                ));
            }
            match length.parse::<usize>() {
                Ok(0) => Ok(BodyFraming::None),
                Ok(length) if length <= limit => Ok(BodyFraming::Length(length)),
                // Over the limit, or beyond usize: refused from the declared length alone.
                _ => Err(HttpError::PayloadTooLarge(limit)),
            }
        }
        _ => Err(HttpError::BadRequest("more than one Content-Length".into())),
    }
}

/// Reads the body the head announced, from the buffer first and then the socket, before
/// `deadline`. The buffer keeps whatever follows the body (a pipelined request).
pub fn read_body(
    stream: &TcpStream,
    buffer: &mut Buffer,
    framing: BodyFraming,
    deadline: Instant,
) -> Result<Zeroizing<Vec<u8>>, ReadError> {
    let body = match framing {
        BodyFraming::None => Ok(Zeroizing::new(Vec::new())),
        BodyFraming::Length(length) => read_length(stream, buffer, length, deadline),
        BodyFraming::Chunked(limit) => read_chunked(stream, buffer, limit, deadline),
    };
    match body {
        Err(ReadError::TimedOut) => Err(HttpError::RequestTimeout.into()),
        other => other,
    }
}

fn read_length(
    stream: &TcpStream,
    buffer: &mut Buffer,
    length: usize,
    deadline: Instant,
) -> Result<Zeroizing<Vec<u8>>, ReadError> {
    // Sized once from the declared length, so no grown-and-freed copies are left behind.
    let mut body = Zeroizing::new(Vec::with_capacity(length));
    while body.len() < length {
        if buffer.is_empty() {
            buffer.fill(stream, deadline)?;
        }
        let take = (length - body.len()).min(buffer.data().len());
        body.extend_from_slice(&buffer.data()[..take]);
        buffer.consume(take);
    }
    Ok(body)
}

fn read_chunked(
    stream: &TcpStream,
    buffer: &mut Buffer,
    limit: usize,
    deadline: Instant,
) -> Result<Zeroizing<Vec<u8>>, ReadError> {
    // The whole limit is reserved at once (untouched pages cost no memory), so the body
    // never moves and leaves no copies behind.
    let mut body = Zeroizing::new(Vec::with_capacity(limit));
    loop {
        let size = loop {
            match httparse::parse_chunk_size(buffer.data()) {
                Ok(httparse::Status::Complete((used, size))) => {
                    buffer.consume(used);
                    break size;
                }
                Ok(httparse::Status::Partial) if buffer.data().len() > MAX_CHUNK_LINE_BYTES => {
                    return Err(HttpError::BadRequest("chunk-size line too long".into()).into())
                }
                Ok(httparse::Status::Partial) => buffer.fill(stream, deadline)?,
                Err(_) => return Err(HttpError::BadRequest("malformed chunk size".into()).into()),
            }
        };
        if size == 0 {
            skip_trailers(stream, buffer, deadline)?;
            return Ok(body);
        }
        let remaining = limit - body.len();
        let size = match usize::try_from(size) {
            Ok(size) if size <= remaining => size,
            _ => return Err(HttpError::PayloadTooLarge(limit).into()),
        };
        let end = body.len() + size;
        while body.len() < end {
            if buffer.is_empty() {
                buffer.fill(stream, deadline)?;
            }
            let take = (end - body.len()).min(buffer.data().len());
            body.extend_from_slice(&buffer.data()[..take]);
            buffer.consume(take);
        }
        while buffer.data().len() < 2 {
            buffer.fill(stream, deadline)?;
        }
        if &buffer.data()[..2] != b"\r\n" {
            return Err(HttpError::BadRequest("chunk data not followed by CRLF".into()).into());
        }
        buffer.consume(2);
    }
}

/// Skips the trailer section after the last chunk, up to its empty line. Trailers are not
/// used; they count against the header-section limit.
fn skip_trailers(
    stream: &TcpStream,
    buffer: &mut Buffer,
    deadline: Instant,
) -> Result<(), ReadError> {
    let mut skipped = 0;
    loop {
        match buffer.data().windows(2).position(|pair| pair == b"\r\n") {
            Some(0) => {
                buffer.consume(2);
                return Ok(());
            }
            Some(position) => {
                skipped += position + 2;
                buffer.consume(position + 2);
            }
            None => buffer.fill(stream, deadline)?,
        }
        if skipped > MAX_HEADER_SECTION_BYTES {
            return Err(HttpError::HeadersTooLarge.into());
        }
    }
}

/// One read into `into` that gives up at `deadline`.
fn read_before(stream: &TcpStream, into: &mut [u8], deadline: Instant) -> Result<usize, ReadError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReadError::TimedOut);
        }
        if stream.set_read_timeout(Some(left)).is_err() {
            return Err(ReadError::Closed);
        }
        match (&*stream).read(into) {
            Ok(count) => return Ok(count),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(ReadError::TimedOut)
            }
            Err(_) => return Err(ReadError::Closed),
        }
    }
}

fn malformed(err: httparse::Error) -> HttpError {
    HttpError::BadRequest(format!("malformed request head: {err}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::http::request::{complete_head, parse_head, BodyFraming};
    use crate::http::HttpError;
    use crate::http::{
        MAX_BODY_BYTES, MAX_HEADERS, MAX_HEADER_SECTION_BYTES, MAX_REQUEST_LINE_BYTES,
    };

    /// A request line of exactly `length` bytes.
    fn line_of(length: usize) -> String {
        let fixed = "GET /".len() + " HTTP/1.1".len();
        format!("GET /{} HTTP/1.1", "a".repeat(length - fixed))
    }

    /// A header section of exactly `length` bytes, in one header line.
    fn section_of(length: usize) -> String {
        let fixed = "X: \r\n\r\n".len();
        format!("X: {}\r\n\r\n", "b".repeat(length - fixed))
    }

    fn code(result: Result<Option<usize>, HttpError>) -> &'static str {
        result.err().map(|err| err.code()).unwrap_or("none")
    }

    #[test]
    fn request_line_of_exactly_the_limit_is_accepted() {
        let head = format!("{}\r\n{}", line_of(MAX_REQUEST_LINE_BYTES), section_of(20));
        assert_eq!(complete_head(head.as_bytes()).unwrap(), Some(head.len()));
    }

    #[test]
    fn request_line_one_byte_over_the_limit_is_414_even_before_it_ends() {
        let line = line_of(MAX_REQUEST_LINE_BYTES + 1);
        assert_eq!(
            code(complete_head(format!("{line}\r\n").as_bytes())),
            "URI_TOO_LONG"
        );
        // Without its line end yet: MAX + 1 bytes and a `\r` could still be in the limit...
        assert_eq!(
            complete_head(&line.as_bytes()[..MAX_REQUEST_LINE_BYTES + 1]).unwrap(),
            None
        );
        // ...but MAX + 2 bytes without a line end cannot.
        let longer = line_of(MAX_REQUEST_LINE_BYTES + 2);
        assert_eq!(code(complete_head(longer.as_bytes())), "URI_TOO_LONG");
    }

    #[test]
    fn header_section_of_exactly_the_limit_is_accepted_and_one_more_byte_is_431() {
        let at = format!("GET / HTTP/1.1\r\n{}", section_of(MAX_HEADER_SECTION_BYTES));
        assert_eq!(complete_head(at.as_bytes()).unwrap(), Some(at.len()));
        let over = format!(
            "GET / HTTP/1.1\r\n{}",
            section_of(MAX_HEADER_SECTION_BYTES + 1)
        );
        assert_eq!(code(complete_head(over.as_bytes())), "HEADERS_TOO_LARGE");
        // Still incomplete but already over: refused without waiting for the rest.
        let longer = format!(
            "GET / HTTP/1.1\r\n{}",
            section_of(MAX_HEADER_SECTION_BYTES + 3)
        );
        let partial = &longer.as_bytes()[..longer.len() - 2];
        assert_eq!(code(complete_head(partial)), "HEADERS_TOO_LARGE");
    }

    #[test]
    fn exactly_the_maximum_header_count_is_accepted_and_one_more_is_431() {
        let head = |count: usize| {
            let mut text = String::from("GET / HTTP/1.1\r\n");
            for index in 0..count {
                text.push_str(&format!("X-{index}: v\r\n"));
            }
            text + "\r\n"
        };
        assert!(complete_head(head(MAX_HEADERS).as_bytes())
            .unwrap()
            .is_some());
        assert_eq!(
            code(complete_head(head(MAX_HEADERS + 1).as_bytes())),
            "HEADERS_TOO_LARGE"
        );
    }

    #[test]
    fn an_incomplete_head_within_the_limits_asks_for_more() {
        assert_eq!(complete_head(b"GET / HTTP/1.1\r\nHost: a").unwrap(), None);
        assert_eq!(complete_head(b"GE").unwrap(), None);
    }

    #[test]
    fn a_garbage_request_line_is_400() {
        assert_eq!(
            code(complete_head(b"\x01\x02 nonsense\r\n\r\n")),
            "BAD_REQUEST"
        );
    }

    fn framing(head: &str) -> Result<BodyFraming, &'static str> {
        parse_head(head.as_bytes(), |_, _| MAX_BODY_BYTES, |_, _| ())
            .map(|(head, ())| head.body)
            .map_err(|err| err.code())
    }

    #[test]
    fn framing_is_one_content_length_or_chunked_alone() {
        let base = "POST / HTTP/1.1\r\nHost: localhost\r\n";
        assert_eq!(framing(&format!("{base}\r\n")), Ok(BodyFraming::None));
        assert_eq!(
            framing(&format!("{base}Content-Length: 12\r\n\r\n")),
            Ok(BodyFraming::Length(12))
        );
        assert_eq!(
            framing(&format!("{base}Transfer-Encoding: Chunked\r\n\r\n")),
            Ok(BodyFraming::Chunked(MAX_BODY_BYTES))
        );
        for bad in [
            "Content-Length: 1\r\nContent-Length: 1\r\n",
            "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n",
            "Transfer-Encoding: gzip, chunked\r\n",
            "Content-Length: +1\r\n",
            "Content-Length: 0x10\r\n",
        ] {
            assert_eq!(
                framing(&format!("{base}{bad}\r\n")),
                Err("BAD_REQUEST"),
                "{bad}"
            );
        }
    }

    #[test]
    fn declared_length_of_exactly_1_mib_is_accepted_and_one_more_byte_is_413() {
        let base = "POST / HTTP/1.1\r\nHost: localhost\r\n";
        let limit = crate::http::MAX_BODY_BYTES;
        assert_eq!(
            framing(&format!("{base}Content-Length: {limit}\r\n\r\n")),
            Ok(BodyFraming::Length(limit))
        );
        for over in [
            format!("{}", limit + 1),
            "99999999999999999999999999".into(),
        ] {
            assert_eq!(
                framing(&format!("{base}Content-Length: {over}\r\n\r\n")),
                Err("PAYLOAD_TOO_LARGE")
            );
        }
    }

    #[test]
    fn connection_tokens_decide_keep_alive_by_version() {
        let keep = |head: &str| {
            parse_head(head.as_bytes(), |_, _| MAX_BODY_BYTES, |_, _| ())
                .unwrap()
                .0
                .keep_alive
        };
        assert!(keep("GET / HTTP/1.1\r\n\r\n"));
        assert!(!keep(
            "GET / HTTP/1.1\r\nConnection: Upgrade, close\r\n\r\n"
        ));
        assert!(keep(
            "GET / HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings\r\n\r\n"
        ));
        assert!(!keep("GET / HTTP/1.0\r\n\r\n"));
        assert!(keep("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
    }
}
