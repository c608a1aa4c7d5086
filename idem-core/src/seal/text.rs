//! A keyring written as text, for services and the `idem` command to read alike from an
//! environment variable or a file.

use std::fmt;
use std::path::Path;

use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;

use super::keyring::{Keyring, MAX_KEY_ID_BYTES, SEAL_KEY_BYTES};

/// Standard base64, with its padding or without (`openssl rand -base64 32` pads).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Why a keyring's text was refused. Its message names the entry at fault by its number and
/// line, never by its text: not even the id is quoted, since a mistyped entry (a key pasted
/// alone, or `KEY=ID`) would put key material where the id goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyringError(String);

impl fmt::Display for KeyringError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeyringError {}

impl Keyring {
    /// A ring from its text form: entries `ID=KEY`, where `ID` is the key's id (1 to 64
    /// visible ASCII characters, without `=`) and `KEY` its 32 bytes in standard base64
    /// (`openssl rand -base64 32`), padded or not. Entries are separated by line feeds or
    /// spaces; a line whose first visible character is `#` is a comment. The first entry is
    /// the current key, which seals everything new; every other one is an old key, which
    /// only opens ([`with_old`](Keyring::with_old)). Rotating is writing the new entry first.
    ///
    /// An error names the entry at fault (its number and line) and what is wrong with it,
    /// never the entry's text: it may reach logs.
    ///
    /// ```
    /// use idem_core::seal::Keyring;
    /// let text = "
    ///     ## current first, then the keys that only open
    ///     2026-11=AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=
    ///     2026-05=AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=
    /// ";
    /// let keys = Keyring::from_text(text)?;
    /// assert_eq!(keys.current_id(), "2026-11");
    ///
    /// let short = Keyring::from_text("k1=c2VjcmV0").unwrap_err();
    /// assert_eq!(
    ///     short.to_string(),
    ///     "keyring entry 1 (line 1): the key is 6 bytes, not 32"
    /// );
    /// # Ok::<(), idem_core::seal::KeyringError>(())
    /// ```
    pub fn from_text(text: &str) -> Result<Self, KeyringError> {
        let mut ring: Option<Keyring> = None;
        let mut ids: Vec<&str> = Vec::new();
        let entries = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim_start().starts_with('#'))
            .flat_map(|(at, line)| {
                line.split_ascii_whitespace()
                    .map(move |entry| (at + 1, entry))
            });
        for (number, (line, entry)) in entries.enumerate() {
            let (id, key) = parse_entry(entry, number + 1, line)?;
            let at = |what: String| {
                KeyringError(format!(
                    "keyring entry {} (line {line}): {what}",
                    number + 1
                ))
            };
            if ids.contains(&id) {
                return Err(at("its id is an earlier entry's".to_owned()));
            }
            ids.push(id);
            let key = key.map_err(at)?;
            ring = Some(match ring {
                None => Keyring::new(id, key),
                Some(ring) => ring.with_old(id, key),
            });
        }
        ring.ok_or_else(|| {
            KeyringError("the keyring holds no key: write one `ID=BASE64KEY` entry".to_owned())
        })
    }

    /// The ring written ([`from_text`](Keyring::from_text)) in the environment variable
    /// `var`: what a service and the `idem` command read from `IDEM_KEYRING`.
    ///
    /// ```no_run
    /// use idem_core::seal::Keyring;
    /// use idem_core::Idempotency;
    /// # fn demo(store: impl idem_core::store::Store) -> Result<(), idem_core::seal::KeyringError> {
    /// let idem = Idempotency::new(store).with_sealing(Keyring::from_env("IDEM_KEYRING")?);
    /// # Ok(()) }
    /// ```
    pub fn from_env(var: &str) -> Result<Self, KeyringError> {
        match std::env::var(var) {
            Ok(text) => Self::from_text(&text).map_err(|error| in_source(error, var)),
            Err(std::env::VarError::NotPresent) => Err(KeyringError(format!(
                "the environment variable {var} is not set: it holds the keyring, one \
                 `ID=BASE64KEY` entry a line"
            ))),
            Err(std::env::VarError::NotUnicode(_)) => Err(KeyringError(format!(
                "the environment variable {var} is not UTF-8: it holds the keyring, one \
                 `ID=BASE64KEY` entry a line"
            ))),
        }
    }

    /// The ring written ([`from_text`](Keyring::from_text)) in the file at `path`, such as a
    /// mounted secret.
    ///
    /// ```no_run
    /// use idem_core::seal::Keyring;
    /// let keys = Keyring::from_file("/run/secrets/idem-keyring")?;
    /// # Ok::<(), idem_core::seal::KeyringError>(())
    /// ```
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, KeyringError> {
        use std::io::Read as _;

        let path = path.as_ref();
        let shown = path.display();
        let unreadable = |error: std::io::Error| {
            KeyringError(format!("could not read the keyring file {shown}: {error}"))
        };
        // Only a regular file of a keyring's size is read: a device (`/dev/zero`) or a pipe
        // would never end, or never answer.
        let metadata = std::fs::metadata(path).map_err(unreadable)?;
        if !metadata.is_file() {
            return Err(KeyringError(format!(
                "the keyring file {shown} is not a regular file"
            )));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| {
                file.take(MAX_KEYRING_FILE_BYTES + 1)
                    .read_to_end(&mut bytes)
            })
            .map_err(unreadable)?;
        if bytes.len() as u64 > MAX_KEYRING_FILE_BYTES {
            return Err(KeyringError(format!(
                "the keyring file {shown} is larger than {MAX_KEYRING_FILE_BYTES} bytes: it \
                 holds one `ID=BASE64KEY` entry a line"
            )));
        }
        let bytes = bytes
            .strip_prefix("\u{feff}".as_bytes())
            .map(<[u8]>::to_vec)
            .unwrap_or(bytes);
        let text = String::from_utf8(bytes).map_err(|_| {
            KeyringError(format!(
                "the keyring file {shown} is not UTF-8: it holds one `ID=BASE64KEY` entry a line"
            ))
        })?;
        Self::from_text(&text).map_err(|error| in_source(error, &shown.to_string()))
    }
}

/// The largest keyring file read: 64 KiB, a thousand keys and more.
const MAX_KEYRING_FILE_BYTES: u64 = 64 * 1024;

/// `error`, saying where the text came from.
fn in_source(error: KeyringError, source: &str) -> KeyringError {
    KeyringError(format!("{source}: {}", error.0))
}

/// The id of `entry` (the `number`th, on `line`), and its key or what is wrong with it.
#[allow(clippy::type_complexity)]
fn parse_entry(
    entry: &str,
    number: usize,
    line: usize,
) -> Result<(&str, Result<[u8; SEAL_KEY_BYTES], String>), KeyringError> {
    let refused = |what: &str| {
        KeyringError(format!(
            "keyring entry {number} (line {line}): {what}; each entry is `ID=BASE64KEY`"
        ))
    };
    let Some((id, encoded)) = entry.split_once('=') else {
        return Err(refused("it has no `=`"));
    };
    if id.is_empty() || id.len() > MAX_KEY_ID_BYTES || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(refused(
            "its id is not 1 to 64 visible ASCII characters before the first `=`",
        ));
    }
    if encoded.is_empty() {
        return Err(refused("it has no key after its `=`"));
    }
    let key = match BASE64.decode(encoded) {
        Err(_) => Err("the key is not standard base64".to_owned()),
        Ok(bytes) => <[u8; SEAL_KEY_BYTES]>::try_from(bytes.as_slice())
            .map_err(|_| format!("the key is {} bytes, not {SEAL_KEY_BYTES}", bytes.len())),
    };
    Ok((id, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONES: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
    const TWOS: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI";

    #[test]
    fn the_first_entry_seals_and_the_others_open() {
        let old = Keyring::new("k1", [1; 32]);
        let sealed = old.seal(b"value", b"ctx");
        let ring = Keyring::from_text(&format!("# rotated\nk2={TWOS}\n\n  k1={ONES}  \n")).unwrap();
        assert_eq!(ring.current_id(), "k2");
        assert_eq!(ring.open(&sealed, b"ctx").unwrap(), b"value");
        assert_eq!(
            ring.seal(b"value", b"ctx"),
            Keyring::new("k2", [2; 32]).seal(b"value", b"ctx")
        );
        let one_line = Keyring::from_text(&format!("k2={TWOS} k1={ONES}")).unwrap();
        assert_eq!(one_line.open(&sealed, b"ctx").unwrap(), b"value");
    }

    #[test]
    fn errors_name_the_entry_and_never_the_key() {
        let cases = [
            (
                format!("k1={ONES}\n\nk1={TWOS}"),
                "entry 2 (line 3): its id is an earlier entry's",
            ),
            (
                format!("k1={}", &ONES[..20]),
                "entry 1 (line 1): the key is 15 bytes, not 32",
            ),
            (
                format!("k1={ONES}!"),
                "entry 1 (line 1): the key is not standard base64",
            ),
            (format!("{ONES}k1"), "entry 1 (line 1): the key is"),
            (
                ONES.to_owned(),
                "entry 1 (line 1): it has no key after its `=`",
            ),
            (
                ONES.trim_end_matches('=').to_owned(),
                "entry 1 (line 1): it has no `=`",
            ),
            (
                format!("{}={ONES}", "i".repeat(65)),
                "its id is not 1 to 64",
            ),
            ("# nothing\n\n".to_owned(), "the keyring holds no key"),
        ];
        for (text, expected) in cases {
            let message = Keyring::from_text(&text).unwrap_err().to_string();
            assert!(message.contains(expected), "{text:?}: {message}");
            assert!(!message.contains(&ONES[..8]), "{message}");
            assert!(!message.contains(&TWOS[..8]), "{message}");
        }
    }

    #[test]
    fn a_file_and_a_variable_say_where_the_text_was() {
        let missing = Keyring::from_file("/nonexistent/idem-keyring").unwrap_err();
        assert!(
            missing.to_string().contains("/nonexistent/idem-keyring"),
            "{missing}"
        );
        let unset = Keyring::from_env("IDEM_TEST_KEYRING_NEVER_SET").unwrap_err();
        assert!(
            unset
                .to_string()
                .contains("IDEM_TEST_KEYRING_NEVER_SET is not set"),
            "{unset}"
        );
        let dir = std::env::temp_dir().join(format!("idem-keyring-{}", std::process::id()));
        std::fs::write(&dir, format!("k1={ONES}\nk2=x\n")).unwrap();
        let bad = Keyring::from_file(&dir).unwrap_err().to_string();
        std::fs::remove_file(&dir).unwrap();
        assert!(
            bad.starts_with(&format!(
                "{}: keyring entry 2 (line 2): the key is",
                dir.display()
            )),
            "{bad}"
        );
    }

    #[test]
    fn only_a_regular_file_of_a_keyring_size_is_read() {
        let device = Keyring::from_file("/dev/zero").unwrap_err().to_string();
        assert!(device.contains("not a regular file"), "{device}");
        let path = std::env::temp_dir().join(format!("idem-keyring-big-{}", std::process::id()));
        let line = format!("k1={ONES}\n");
        std::fs::write(&path, line.repeat(2_000)).unwrap();
        let big = Keyring::from_file(&path).unwrap_err().to_string();
        std::fs::write(&path, format!("\u{feff}{line}")).unwrap();
        let with_bom = Keyring::from_file(&path).map(|ring| ring.current_id().to_owned());
        std::fs::remove_file(&path).unwrap();
        assert!(big.contains("larger than 65536 bytes"), "{big}");
        assert_eq!(
            with_bom.unwrap(),
            "k1",
            "a byte order mark is no part of the id"
        );
    }
}
