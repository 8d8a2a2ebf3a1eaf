//! The GPU service's target: its messages (`histopipe_cli::service`, docs/histopipe-service.md), as a
//! hostile client of the user's own sends them.
//!
//! An input is a connection's stream of bytes: read message after message as the service reads
//! it (`decode_stream`: the 8-byte header, its bounds, the body, each body decoded as a message of
//! its kind: a hello, a frame and its samples out of a shared memory block, a reply's parts, a
//! refusal), and its first byte as a message's kind and the rest as its body (`decode_message`),
//! so that mutations reach each decoder without having to keep a header's length right. Neither may
//! panic, and the heap held may not pass [`BOUND_FIXED`] (a body the header claims, read whole
//! before it is parsed: at most 1 MiB) and [`BOUND_PER_BYTE`] bytes an input byte (a reply's part
//! of a few bytes is a copy of up to the block's page).

use histopipe_cli::service::{decode_message, decode_stream, seed_messages};

use crate::alloc::HeapMeter;
use crate::digest::Digest;
use crate::finding::{Finding, FindingKind};
use crate::input::Input;
use crate::kind::Checked;
use crate::panics::guarded;
use crate::seeds::Seed;
use crate::side::panic_finding;
use crate::target::Limits;

/// The heap an input may hold whatever its length: a body of 1 MiB and room for the rest.
pub const BOUND_FIXED: u64 = (1 << 20) + (256 << 10);

/// The heap an input may hold per byte of it, beyond [`BOUND_FIXED`]: a reply's part of 17 bytes
/// may name the block's whole page, which the tool copies out (4096 / 17, 241 bytes a byte, and
/// the part's own place in the list).
pub const BOUND_PER_BYTE: u64 = 256;

/// The service's messages and a session's stream.
pub fn seeds() -> Vec<Seed> {
    seed_messages()
        .into_iter()
        .enumerate()
        .map(|(i, bytes)| Seed { name: format!("service message {i}"), input: Input::described(bytes) })
        .collect()
}

/// The words of a refusal without its numbers, for the outcome's shape.
fn words(why: &str) -> String {
    why.chars().filter(|c| !c.is_ascii_digit()).take(48).collect()
}

/// Reads `input` as the module says.
pub fn check(input: &Input, _limits: &Limits) -> Result<Checked, Finding> {
    let bytes = &input.bytes;
    let meter = HeapMeter::start();
    let (read, why) =
        guarded(|| decode_stream(bytes)).map_err(|note| panic_finding("decode_stream", note))?;
    let (kind, body) = bytes.split_first().map_or((0, &[][..]), |(k, b)| (*k, b));
    let decoded =
        guarded(|| decode_message(kind, body)).map_err(|note| panic_finding("decode_message", note))?;
    let bound = BOUND_FIXED + BOUND_PER_BYTE * bytes.len() as u64;
    if meter.peak() > bound {
        return Err(Finding {
            kind: FindingKind::Alloc,
            signature: "alloc in the service's messages".into(),
            detail: format!(
                "{} input bytes held {} bytes, over the bound of {bound} (1.25 MiB and {BOUND_PER_BYTE} bytes a byte)",
                bytes.len(),
                meter.peak()
            ),
        });
    }
    let mut shape = Digest::new();
    shape.word(read.min(4) as u64);
    shape.bytes(words(&why).as_bytes());
    shape.word(u64::from(kind));
    let message = match &decoded {
        Ok(()) => "read".to_owned(),
        Err(e) => format!("refused: {e}"),
    };
    shape.bytes(words(&message).as_bytes());
    Ok(Checked {
        shape: shape.finish(),
        text: format!("{read} messages, then {why}; as kind {kind}: {message}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_are_read() {
        for seed in seeds() {
            let checked = check(&seed.input, &Limits::standard()).unwrap();
            assert!(checked.text.contains("then the connection closed"), "{}: {checked}", seed.name);
        }
    }

    /// A reply naming the block's page in a thousand parts would be a thousand copies of it: it
    /// is refused, the parts together being more than the block holds.
    #[test]
    fn a_reply_of_many_parts_is_refused() {
        // No kernels loaded for it; parts, not an error.
        let mut body = vec![0u8, 0];
        body.extend_from_slice(&1000u32.to_le_bytes());
        for _ in 0..1000 {
            body.push(1);
            body.extend_from_slice(&0u64.to_le_bytes());
            body.extend_from_slice(&4096u64.to_le_bytes());
        }
        let mut message = vec![b'H', b'P', 5, 0];
        message.extend_from_slice(&(body.len() as u32).to_le_bytes());
        message.extend_from_slice(&body);
        let checked = check(&Input::described(message), &Limits::standard()).unwrap();
        assert!(
            checked.text.starts_with("0 messages, then parts of more bytes than the block's"),
            "{checked}"
        );
    }
}
