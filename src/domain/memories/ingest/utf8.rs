//! Whether a content arriving in frames cut anywhere (even inside a
//! character) is UTF-8: a put that answers before its exact count says its
//! count is settling only when there will be one, and only text has one.

/// The check of a content so far.
#[derive(Debug, Default)]
pub(super) struct Utf8Check {
    /// The start of a character the last frame cut (at most 3 bytes).
    tail: Vec<u8>,
    /// A byte sequence that is not UTF-8 was seen.
    broken: bool,
}

impl Utf8Check {
    /// Takes the next frame.
    pub(super) fn feed(&mut self, frame: &[u8]) {
        if self.broken {
            return;
        }
        let mut rest = frame;
        if !self.tail.is_empty() {
            // Complete the character the previous frame cut, byte by byte:
            // at most three bytes, whatever the frames' sizes.
            while let Some((&byte, after)) = rest.split_first() {
                self.tail.push(byte);
                rest = after;
                match std::str::from_utf8(&self.tail) {
                    Ok(_) => break,
                    Err(e) if e.error_len().is_some() => {
                        self.broken = true;
                        return;
                    }
                    Err(_) => {}
                }
            }
            if std::str::from_utf8(&self.tail).is_err() {
                return; // still cut: the next frame goes on with it
            }
            self.tail.clear();
        }
        if let Err(e) = std::str::from_utf8(rest) {
            match e.error_len() {
                Some(_) => self.broken = true,
                None => self.tail = rest[e.valid_up_to()..].to_vec(),
            }
        }
    }

    /// Whether everything taken is UTF-8 (a character cut at the end is not).
    pub(super) fn is_text(&self) -> bool {
        !self.broken && self.tail.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn checked(content: &[u8], frame: usize) -> bool {
        let mut check = Utf8Check::default();
        for chunk in content.chunks(frame.max(1)) {
            check.feed(chunk);
        }
        check.is_text()
    }

    #[test]
    fn text_cut_inside_characters_is_text_and_a_bad_byte_is_not() {
        let text = "Ünïcödé — ✓ 日本語 😀👍🏽 plain ascii\n".repeat(50);
        for frame in [1, 2, 3, 5, 7, 64, 4096] {
            assert!(checked(text.as_bytes(), frame), "frames of {frame}");
        }
        let mut bad = text.clone().into_bytes();
        bad[900] = 0xff;
        assert!(!checked(&bad, 7));
        // A character cut off at the end of the content is not text.
        let cut = &text.as_bytes()[..text.find('😀').unwrap() + 2];
        assert!(!checked(cut, 3));
        // An overlong or surrogate encoding is not text either.
        assert!(!checked(b"ab\xc0\xafcd", 3));
        assert!(!checked(b"ab\xed\xa0\x80cd", 3));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_framing_agrees_with_one_check(bytes in proptest::collection::vec(any::<u8>(), 0..200), text in "\\PC{0,60}", frame in 1usize..9) {
            prop_assert_eq!(checked(text.as_bytes(), frame), true);
            prop_assert_eq!(checked(&bytes, frame), std::str::from_utf8(&bytes).is_ok());
        }
    }
}
