//! Server-sent events framing: bytes in, events out, within limits.
//!
//! [`SseDecoder`] splits a byte stream into events (the WHATWG `text/event-stream` rules:
//! `\n`, `\r\n` and `\r` line ends, `:` comments, multi-line `data:`, events ended by a blank
//! line). It buffers bytes, not text, so a UTF-8 character split across network reads is
//! whole again before it is decoded.

use super::{Limit, StreamError};

/// One dispatched event: its `event:` name ("" when none was given), its data lines joined
/// with `\n`, and the line its first `data:` line was on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseEvent<'a> {
    pub event: &'a str,
    pub data: &'a str,
    pub line: usize,
}

/// The most a [`SseDecoder`] holds, so a server (or anything between) sending a line that
/// never ends cannot make it buffer without bound. A chat-completions chunk is one line of
/// a few hundred bytes; the defaults leave room for a whole long answer in one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseLimits {
    /// The longest line, in bytes, without its line end.
    pub max_line: usize,
    /// The most data one event may gather, in bytes (its `data:` lines joined).
    pub max_event: usize,
}

impl SseLimits {
    pub const DEFAULT_MAX_LINE: usize = 4 << 20;
    pub const DEFAULT_MAX_EVENT: usize = 16 << 20;
}

impl Default for SseLimits {
    fn default() -> Self {
        SseLimits {
            max_line: Self::DEFAULT_MAX_LINE,
            max_event: Self::DEFAULT_MAX_EVENT,
        }
    }
}

/// Splits bytes into server-sent events. Feed it bytes as they arrive, in any pieces.
#[derive(Debug, Default)]
pub struct SseDecoder {
    limits: SseLimits,
    /// The bytes of the line in progress.
    partial: Vec<u8>,
    /// The last bytes fed ended with `\r`: a `\n` first in the next bytes belongs to it.
    after_cr: bool,
    /// Lines completed so far.
    line: usize,
    event: String,
    data: String,
    has_data: bool,
    data_line: usize,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_limits(limits: SseLimits) -> Self {
        SseDecoder {
            limits,
            ..Self::default()
        }
    }

    /// Lines completed so far.
    pub fn lines(&self) -> usize {
        self.line
    }

    /// Reads `bytes`; calls `on_event` for every event they complete, in order. On an error
    /// the bytes after the offending line are dropped (the stream is unusable).
    pub fn feed<E>(
        &mut self,
        bytes: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<StreamError>,
    {
        let mut rest = bytes;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(i) = memchr::memchr2(b'\n', b'\r', rest) {
            self.check_line(self.partial.len() + i)?;
            if self.partial.is_empty() {
                self.line_done(&rest[..i], &mut on_event)?;
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..i]);
                let result = self.line_done(&line, &mut on_event);
                line.clear();
                self.partial = line;
                result?;
            }
            let ended_by_cr = rest[i] == b'\r';
            rest = &rest[i + 1..];
            if ended_by_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        // Refused before it is buffered: the line in progress never outgrows the limit.
        self.check_line(self.partial.len() + rest.len())?;
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// Fails if the line in progress, `len` bytes so far, is over the line limit.
    fn check_line(&self, len: usize) -> Result<(), StreamError> {
        if len <= self.limits.max_line {
            return Ok(());
        }
        Err(StreamError::TooLarge {
            line: self.line + 1,
            limit: Limit::Line,
            bytes: self.limits.max_line,
        })
    }

    /// The bytes have ended: an unterminated last line counts as a line, and an event still
    /// open (no blank line after it) is dispatched rather than dropped.
    pub fn finish<E>(
        &mut self,
        mut on_event: impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<StreamError>,
    {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line_done(&line, &mut on_event)?;
        }
        self.dispatch(&mut on_event)
    }

    fn line_done<E>(
        &mut self,
        raw: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<StreamError>,
    {
        self.line += 1;
        let mut raw = raw;
        if self.line == 1 {
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        match raw.first() {
            None => return self.dispatch(on_event),
            Some(b':') => return Ok(()), // a comment or keep-alive
            Some(_) => {}
        }
        let Ok(text) = simdutf8::basic::from_utf8(raw) else {
            return Err(StreamError::InvalidUtf8 { line: self.line }.into());
        };
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (text, ""),
        };
        match field {
            "data" => {
                let start = if self.has_data {
                    self.data_line
                } else {
                    self.line
                };
                if self.data.len() + usize::from(self.has_data) + value.len()
                    > self.limits.max_event
                {
                    return Err(StreamError::TooLarge {
                        line: start,
                        limit: Limit::Event,
                        bytes: self.limits.max_event,
                    }
                    .into());
                }
                if self.has_data {
                    self.data.push('\n');
                } else {
                    self.has_data = true;
                    self.data_line = self.line;
                }
                self.data.push_str(value);
            }
            "event" => {
                self.event.clear();
                self.event.push_str(value);
            }
            _ => {} // id, retry and unknown fields do not matter here
        }
        Ok(())
    }

    fn dispatch<E>(
        &mut self,
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let result = if self.has_data {
            on_event(SseEvent {
                event: &self.event,
                data: &self.data,
                line: self.data_line,
            })
        } else {
            Ok(())
        };
        self.has_data = false;
        self.data.clear();
        self.event.clear();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(pieces: &[&[u8]]) -> Vec<(String, String, usize)> {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        let mut on = |ev: SseEvent<'_>| -> Result<(), StreamError> {
            out.push((ev.event.to_owned(), ev.data.to_owned(), ev.line));
            Ok(())
        };
        for p in pieces {
            dec.feed(p, &mut on).unwrap();
        }
        dec.finish(&mut on).unwrap();
        out
    }

    fn ev(event: &str, data: &str, line: usize) -> (String, String, usize) {
        (event.into(), data.into(), line)
    }

    #[test]
    fn sse_line_ends_comments_and_multiline_data() {
        let want = vec![ev("", "a", 2), ev("", "b\nc", 4), ev("x", "d", 8)];
        for sep in ["\n", "\r\n", "\r"] {
            let text = [
                ": ping", "data: a", "", "data: b", "data:c", "", "event: x", "data: d", "",
            ]
            .join(sep);
            assert_eq!(events(&[text.as_bytes()]), want, "line end {sep:?}");
            // every split point, including between \r and \n
            for at in 0..=text.len() {
                let (a, b) = text.as_bytes().split_at(at);
                assert_eq!(events(&[a, b]), want, "line end {sep:?} split at {at}");
            }
        }
    }

    #[test]
    fn sse_unterminated_last_event_is_dispatched_and_empty_events_skipped() {
        assert_eq!(events(&[b"\n\nid: 3\n\ndata: z"]), vec![ev("", "z", 5)]);
        assert_eq!(events(&[b"data\n\n"]), vec![ev("", "", 1)]);
        assert_eq!(
            events(&[b"\xEF\xBB\xBFdata: bom\n\n"]),
            vec![ev("", "bom", 1)]
        );
    }

    #[test]
    fn sse_invalid_utf8_names_the_line() {
        let mut dec = SseDecoder::new();
        let err = dec
            .feed(b"data: ok\n\ndata: \xff\n", |_| Ok::<(), StreamError>(()))
            .unwrap_err();
        assert_eq!(err, StreamError::InvalidUtf8 { line: 3 });
    }

    fn limited(max_line: usize, max_event: usize) -> SseDecoder {
        SseDecoder::with_limits(SseLimits {
            max_line,
            max_event,
        })
    }

    #[test]
    fn sse_a_line_over_the_limit_fails_before_it_is_buffered() {
        let ok = |_: SseEvent<'_>| Ok::<(), StreamError>(());
        // At the limit is fine, whole or in pieces, with any line end.
        for end in ["\n", "\r\n", "\r"] {
            let mut dec = limited(10, 100);
            dec.feed(format!("data: 1234{end}{end}").as_bytes(), ok)
                .unwrap();
            dec.feed(b"data", ok).unwrap();
            dec.feed(format!(": 1234{end}").as_bytes(), ok).unwrap();
        }
        // One byte more fails, in one piece or as a line that never ends.
        let mut dec = limited(10, 100);
        let err = dec.feed(b"data: ok\n\ndata: 12345\n", ok).unwrap_err();
        let too_long = StreamError::TooLarge {
            line: 3,
            limit: Limit::Line,
            bytes: 10,
        };
        assert_eq!(err, too_long);
        let mut dec = limited(10, 100);
        dec.feed(b"data: ok\n\ndata: ", ok).unwrap();
        assert_eq!(dec.feed(b"12345", ok).unwrap_err(), too_long);
        assert!(dec.partial.capacity() <= 10, "the long line was buffered");
        let text = too_long.to_string();
        assert!(
            text.contains("line 3") && text.contains("max_sse_line_bytes=10"),
            "{text}"
        );
    }

    #[test]
    fn sse_an_event_over_the_limit_names_its_first_line() {
        let ok = |_: SseEvent<'_>| Ok::<(), StreamError>(());
        // 4 + 1 + 4 bytes of data: at a limit of 9 it passes, at 8 it fails.
        let text = b": ping\ndata: abcd\ndata: efgh\n\n";
        limited(100, 9).feed(text, ok).unwrap();
        let err = limited(100, 8).feed(text, ok).unwrap_err();
        assert_eq!(
            err,
            StreamError::TooLarge {
                line: 2,
                limit: Limit::Event,
                bytes: 8,
            }
        );
        assert!(err.to_string().contains("max_sse_event_bytes=8"), "{err}");
        // The limit is per event: many events each under it pass.
        let many = "data: abcd\n\n".repeat(100);
        limited(100, 8).feed(many.as_bytes(), ok).unwrap();
    }
}
