//! Content parts given as bytes: base64 `data:` URLs, MIME type checks and image sniffing.
//!
//! Images and files given as bytes travel as `data:<mime>;base64,<b64>` URLs (the shape of
//! OpenAI's content parts, which the other providers' mappings read back), so the message
//! model stores one string per part and a checkpoint holds it as is.

/// The image types every supported provider accepts.
pub const IMAGE_MIME_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (RFC 4648 section 4).
pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `data:<mime>;base64,<b64>`.
pub fn data_url(mime: &str, data: &[u8]) -> String {
    format!("data:{mime};base64,{}", base64_encode(data))
}

/// The MIME type of a `data:` URL (`data:<mime>;base64,...`), else None.
pub fn data_url_mime(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("data:")?;
    let end = rest.find([';', ','])?;
    Some(&rest[..end])
}

/// The image type of `data` from its leading bytes, for the types in [`IMAGE_MIME_TYPES`].
pub fn sniff_image(data: &[u8]) -> Option<&'static str> {
    if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if data.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The type of a file from its leading bytes (PDF only: the one file type every provider's
/// file input takes).
pub fn sniff_file(data: &[u8]) -> Option<&'static str> {
    data.starts_with(b"%PDF-").then_some("application/pdf")
}

/// Whether `mime` is a well-formed `type/subtype` (RFC 6838 restricted names, no parameters).
pub fn is_mime(mime: &str) -> bool {
    let token = |s: &str| {
        !s.is_empty()
            && s.len() <= 127
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    matches!(mime.split_once('/'), Some((t, s)) if token(t) && token(s))
}

/// Whether `url` can be sent as an image URL: http(s) or a base64 `data:` URL of an image type.
pub fn image_url_error(url: &str) -> Option<String> {
    if url.starts_with("https://") || url.starts_with("http://") {
        return None;
    }
    if url.starts_with("data:") {
        return match data_url_mime(url) {
            Some(m) if IMAGE_MIME_TYPES.contains(&m) && url.contains(";base64,") => None,
            Some(m) if IMAGE_MIME_TYPES.contains(&m) => Some(format!(
                "the image data URL is not base64 (expected \"data:{m};base64,...\")"
            )),
            m => Some(format!(
                "the image data URL has MIME type {:?}; supported: {}",
                m.unwrap_or(""),
                IMAGE_MIME_TYPES.join(", ")
            )),
        };
    }
    Some(format!(
        "an image URL must be an http(s) URL or a data: URL, got {:?}",
        url.chars().take(40).collect::<String>()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (raw, b64) in cases {
            assert_eq!(base64_encode(raw.as_bytes()), b64);
        }
        assert_eq!(base64_encode(&[0xff, 0xfe, 0xfd]), "//79");
    }

    #[test]
    fn data_urls_carry_their_mime_type() {
        let url = data_url("image/png", b"abc");
        assert_eq!(url, "data:image/png;base64,YWJj");
        assert_eq!(data_url_mime(&url), Some("image/png"));
        assert_eq!(data_url_mime("https://x/y.png"), None);
    }

    #[test]
    fn images_are_recognised_by_their_magic_bytes() {
        assert_eq!(sniff_image(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff_image(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(sniff_image(b"GIF89a.."), Some("image/gif"));
        assert_eq!(sniff_image(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff_image(b"hello"), None);
        assert_eq!(sniff_file(b"%PDF-1.7"), Some("application/pdf"));
    }

    #[test]
    fn mime_types_must_be_type_slash_subtype() {
        assert!(is_mime("application/pdf"));
        assert!(is_mime("application/vnd.ms-excel"));
        assert!(!is_mime("pdf"));
        assert!(!is_mime("text/"));
        assert!(!is_mime("text/plain; charset=utf-8"));
    }

    #[test]
    fn image_urls_are_checked() {
        assert_eq!(image_url_error("https://example.com/a.png"), None);
        assert_eq!(image_url_error("data:image/png;base64,YWJj"), None);
        assert!(image_url_error("data:image/bmp;base64,YWJj")
            .unwrap()
            .contains("image/bmp"));
        assert!(image_url_error("ftp://x").unwrap().contains("http(s)"));
    }
}
