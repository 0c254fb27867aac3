//! The kinds of lines the generator writes, and their number and date formatting.

use super::{PHRASES, TextGenerator};

/// Days from 1970-01-01 to 2026-03-02, where the generated clock starts.
const START_DAY: u64 = 20_514;

const LEVELS: [&str; 4] = ["INFO ", "DEBUG", "WARN ", "ERROR"];
const JSON_LEVELS: [&str; 4] = ["info", "debug", "warn", "error"];

const HTTP_METHODS: &[&str] = &["GET", "GET", "GET", "POST", "PUT", "DELETE", "PATCH"];
const STATUSES: &[u64] = &[
    200, 200, 200, 200, 201, 204, 304, 400, 401, 404, 409, 429, 500, 503,
];

impl TextGenerator {
    fn level(&mut self) -> usize {
        match self.rng.below(100) {
            0..70 => 0,
            70..85 => 1,
            85..96 => 2,
            _ => 3,
        }
    }

    pub(super) fn log_line(&mut self, out: &mut Vec<u8>) {
        self.push_timestamp(out);
        out.push(b' ');
        let level = self.level();
        out.extend_from_slice(LEVELS[level].as_bytes());
        out.extend_from_slice(b" [");
        if self.rng.chance(80) {
            out.extend_from_slice(b"worker-");
            push_u64(out, self.rng.below(16));
        } else {
            out.extend_from_slice(b"main");
        }
        out.extend_from_slice(b"] ");
        out.extend_from_slice(self.rng.skewed(&self.vocab.modules).as_bytes());
        out.extend_from_slice(b": ");
        match self.rng.below(7) {
            0 | 1 => self.http_message(out),
            2 => {
                out.extend_from_slice(b"acquired connection from pool (idle=");
                push_u64(out, self.rng.below(32));
                out.extend_from_slice(b", active=");
                push_u64(out, self.rng.below(64));
                out.extend_from_slice(b", waiting=");
                push_u64(out, self.rng.below(4));
                out.push(b')');
            }
            3 => {
                out.extend_from_slice(b"retrying request to ");
                out.extend_from_slice(self.rng.pick(&self.vocab.hosts).as_bytes());
                out.push(b':');
                push_u64(out, self.rng.pick(&[443, 5432, 6379, 8080, 9092]));
                out.extend_from_slice(b" after ");
                push_u64(out, self.rng.range(10, 5000));
                out.extend_from_slice(b"ms (attempt ");
                push_u64(out, self.rng.range(1, 5));
                out.extend_from_slice(b"/5): ");
                self.sentence(out, 3, 8);
            }
            4 => {
                out.extend_from_slice(b"processed batch of ");
                push_u64(out, self.rng.range(1, 5000));
                out.extend_from_slice(b" records in ");
                self.push_decimal(out, 10_000);
                out.extend_from_slice(b"s (");
                out.extend_from_slice(self.rng.skewed(&self.vocab.idents).as_bytes());
                out.push(b'=');
                push_u64(out, self.rng.below(1 << 20));
                out.push(b')');
            }
            _ => {
                self.sentence(out, 4, 14);
                if self.rng.chance(50) {
                    out.extend_from_slice(b" key=");
                    out.extend_from_slice(self.rng.skewed(&self.vocab.words).as_bytes());
                    out.push(b':');
                    push_u64(out, self.rng.below(100_000));
                }
            }
        }
    }

    fn http_message(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.rng.pick(HTTP_METHODS).as_bytes());
        out.push(b' ');
        self.url_path(out);
        out.extend_from_slice(b" status=");
        push_u64(out, self.rng.skewed(STATUSES));
        out.extend_from_slice(b" dur_ms=");
        self.push_decimal(out, 2_000);
        out.extend_from_slice(b" bytes=");
        push_u64(out, self.rng.skewed_index(200_000) as u64);
        if self.rng.chance(50) {
            out.extend_from_slice(b" req_id=");
            push_hex(out, self.rng.next(), 16);
        }
    }

    fn url_path(&mut self, out: &mut Vec<u8>) {
        for _ in 0..self.rng.range(2, 4) {
            out.push(b'/');
            out.extend_from_slice(self.rng.skewed(&self.vocab.segments).as_bytes());
        }
        if self.rng.chance(50) {
            out.push(b'/');
            push_u64(out, self.rng.skewed_index(100_000) as u64);
        }
        if self.rng.chance(30) {
            out.extend_from_slice(b"?page=");
            push_u64(out, self.rng.range(1, 40));
        }
    }

    pub(super) fn code_line(&mut self, out: &mut Vec<u8>) {
        let depth = self.rng.below(5) as usize;
        out.resize(out.len() + depth * 4, b' ');
        match self.rng.below(10) {
            0 | 1 => {
                out.extend_from_slice(b"let ");
                self.ident(out);
                out.extend_from_slice(b" = ");
                self.ident(out);
                out.push(b'.');
                out.extend_from_slice(self.rng.skewed(&self.vocab.methods).as_bytes());
                out.extend_from_slice(b"(&");
                self.ident(out);
                out.extend_from_slice(b", ");
                push_u64(out, self.rng.below(4096));
                out.extend_from_slice(b")?;");
            }
            2 => {
                out.extend_from_slice(b"if ");
                self.ident(out);
                out.extend_from_slice(b".len() > ");
                push_u64(out, self.rng.below(1024));
                out.extend_from_slice(b" {");
            }
            3 => {
                out.extend_from_slice(b"return Err(Error::");
                out.extend_from_slice(self.rng.skewed(&self.vocab.types).as_bytes());
                out.extend_from_slice(b"(format!(\"");
                self.sentence(out, 2, 6);
                out.extend_from_slice(b": {}\", ");
                self.ident(out);
                out.extend_from_slice(b")));");
            }
            4 => out.push(b'}'),
            5 => {
                out.extend_from_slice(b"pub fn ");
                self.ident(out);
                out.extend_from_slice(b"(&self, ");
                self.ident(out);
                out.extend_from_slice(b": &");
                out.extend_from_slice(self.rng.skewed(&self.vocab.types).as_bytes());
                out.extend_from_slice(b") -> Result<");
                out.extend_from_slice(self.rng.skewed(&self.vocab.types).as_bytes());
                out.extend_from_slice(b"> {");
            }
            6 => {
                out.extend_from_slice(b"// ");
                self.sentence(out, 4, 12);
            }
            7 => {
                out.extend_from_slice(b"self.");
                self.ident(out);
                out.push(b'.');
                out.extend_from_slice(self.rng.skewed(&self.vocab.methods).as_bytes());
                out.push(b'(');
                self.ident(out);
                out.extend_from_slice(b".clone(), ");
                push_u64(out, self.rng.below(65_536));
                out.extend_from_slice(b");");
            }
            8 => {
                out.extend_from_slice(b"for ");
                self.ident(out);
                out.extend_from_slice(b" in ");
                self.ident(out);
                out.extend_from_slice(b".iter() {");
            }
            _ => {
                out.extend_from_slice(b"def ");
                self.ident(out);
                out.extend_from_slice(b"(self, ");
                self.ident(out);
                out.extend_from_slice(b", ");
                self.ident(out);
                out.extend_from_slice(b"=None):");
            }
        }
    }

    pub(super) fn json_line(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"ts\":");
        push_u64(out, 1_772_409_600_000 + self.clock_ms);
        out.extend_from_slice(b",\"level\":\"");
        let level = self.level();
        out.extend_from_slice(JSON_LEVELS[level].as_bytes());
        out.extend_from_slice(b"\",\"service\":\"");
        out.extend_from_slice(self.rng.skewed(&self.vocab.modules).as_bytes());
        out.extend_from_slice(b"\",\"msg\":\"");
        self.sentence(out, 3, 10);
        out.extend_from_slice(b"\",\"user_id\":");
        push_u64(out, self.rng.skewed_index(1_000_000) as u64);
        out.extend_from_slice(b",\"duration_ms\":");
        self.push_decimal(out, 5_000);
        if self.rng.chance(40) {
            out.extend_from_slice(b",\"trace_id\":\"");
            push_hex(out, self.rng.next(), 16);
            push_hex(out, self.rng.next(), 16);
            out.push(b'"');
        }
        out.extend_from_slice(b",\"tags\":[\"");
        out.extend_from_slice(self.rng.skewed(&self.vocab.words).as_bytes());
        out.extend_from_slice(b"\",\"");
        out.extend_from_slice(self.rng.skewed(&self.vocab.words).as_bytes());
        out.extend_from_slice(b"\"]}");
    }

    pub(super) fn misc_line(&mut self, out: &mut Vec<u8>) {
        match self.rng.below(5) {
            0 => {
                out.extend_from_slice(b"tests/");
                out.extend_from_slice(self.rng.skewed(&self.vocab.dirs).as_bytes());
                out.extend_from_slice(b"/test_");
                self.ident(out);
                out.extend_from_slice(b".py::test_");
                self.ident(out);
                out.push(b'[');
                push_u64(out, self.rng.below(64));
                out.extend_from_slice(if self.rng.chance(93) {
                    b"] PASSED"
                } else {
                    b"] FAILED"
                });
            }
            1 => {
                out.extend_from_slice(b"    at com.example.");
                out.extend_from_slice(self.rng.skewed(&self.vocab.dirs).as_bytes());
                out.push(b'.');
                let class = self
                    .rng
                    .skewed(&self.vocab.types)
                    .trim_end_matches(|c: char| !c.is_alphanumeric());
                out.extend_from_slice(class.as_bytes());
                out.extend_from_slice(b"Service.");
                self.ident(out);
                out.push(b'(');
                out.extend_from_slice(class.as_bytes());
                out.extend_from_slice(b"Service.java:");
                push_u64(out, self.rng.range(12, 900));
                out.push(b')');
            }
            2 => {
                out.extend_from_slice(b"/home/runner/work/app/");
                self.file_path(out, b".rs");
                out.push(b':');
                push_u64(out, self.rng.range(1, 1200));
                out.push(b':');
                push_u64(out, self.rng.range(1, 80));
                out.extend_from_slice(b": warning: unused variable: `");
                self.ident(out);
                out.push(b'`');
            }
            3 => {
                out.extend_from_slice(b"-rw-r--r-- 1 runner runner ");
                push_u64(out, self.rng.below(10_000_000));
                out.extend_from_slice(b" Mar ");
                push_u64(out, self.rng.range(1, 28));
                out.push(b' ');
                self.push_clock(out, false);
                out.push(b' ');
                self.file_path(out, b".py");
            }
            _ => {
                out.extend_from_slice(b"  File \"/usr/lib/python3.11/");
                self.file_path(out, b".py");
                out.extend_from_slice(b"\", line ");
                push_u64(out, self.rng.range(1, 2000));
                out.extend_from_slice(b", in ");
                self.ident(out);
            }
        }
    }

    /// An identifier: usually a common one, sometimes two words joined.
    fn ident(&mut self, out: &mut Vec<u8>) {
        if self.rng.chance(85) {
            out.extend_from_slice(self.rng.skewed(&self.vocab.idents).as_bytes());
        } else {
            out.extend_from_slice(self.rng.pick(&self.vocab.words).as_bytes());
            out.push(b'_');
            out.extend_from_slice(self.rng.pick(&self.vocab.idents).as_bytes());
        }
    }

    fn file_path(&mut self, out: &mut Vec<u8>, extension: &[u8]) {
        for _ in 0..self.rng.range(1, 3) {
            out.extend_from_slice(self.rng.skewed(&self.vocab.dirs).as_bytes());
            out.push(b'/');
        }
        self.ident(out);
        out.extend_from_slice(extension);
    }

    /// A stock phrase most of the time, else `min..=max` random words.
    fn sentence(&mut self, out: &mut Vec<u8>, min: u64, max: u64) {
        if self.rng.chance(85) {
            let phrase = &self.phrases[self.rng.skewed_index(PHRASES)];
            out.extend_from_slice(phrase);
        } else {
            self.random_words(out, min, max);
        }
    }

    pub(super) fn random_words(&mut self, out: &mut Vec<u8>, min: u64, max: u64) {
        for i in 0..self.rng.range(min, max) {
            if i > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(self.rng.skewed(&self.vocab.words).as_bytes());
        }
    }

    /// A number with one decimal, below `whole_max`, usually small.
    fn push_decimal(&mut self, out: &mut Vec<u8>, whole_max: u64) {
        let whole = self.rng.below(whole_max).min(self.rng.below(whole_max));
        push_u64(out, whole);
        out.push(b'.');
        push_u64(out, self.rng.below(10));
    }

    /// `2026-03-14T09:12:33.123Z`
    fn push_timestamp(&self, out: &mut Vec<u8>) {
        let (year, month, day) = civil_from_days(START_DAY + self.clock_ms / 86_400_000);
        push_u64(out, year);
        out.push(b'-');
        push_padded(out, month, 2);
        out.push(b'-');
        push_padded(out, day, 2);
        out.push(b'T');
        self.push_clock(out, true);
        out.push(b'Z');
    }

    /// `09:12:33.123` (or `09:12` without seconds).
    fn push_clock(&self, out: &mut Vec<u8>, seconds: bool) {
        let ms = self.clock_ms % 86_400_000;
        push_padded(out, ms / 3_600_000, 2);
        out.push(b':');
        push_padded(out, ms / 60_000 % 60, 2);
        if seconds {
            out.push(b':');
            push_padded(out, ms / 1000 % 60, 2);
            out.push(b'.');
            push_padded(out, ms % 1000, 3);
        }
    }
}

/// Year, month, day of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

fn push_padded(out: &mut Vec<u8>, n: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut n = n;
    for slot in digits[..width].iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.extend_from_slice(&digits[..width]);
}

fn push_hex(out: &mut Vec<u8>, value: u64, digits: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in (0..digits).rev() {
        out.push(HEX[((value >> (i * 4)) & 0xf) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_right() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(START_DAY), (2026, 3, 2));
    }
}
