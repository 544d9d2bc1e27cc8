//! Writes a crafted bundle for `scripts/bench/crafted.sh`: frames, seek table, integrity frame
//! and checksum list all valid, around one blob of BYTES incompressible bytes whose tar header
//! lies about its size, so the reader gets past every check on the file itself and must catch
//! the lie from what it reads.
//!
//! ```text
//! cargo run --release -p bundle-spec --features test-support --example crafted_bundle -- KIND BYTES OUT
//! ```
//!
//! KIND is what the blob's header claims:
//! - `header-size`: a size near 2^64 (canonical in GNU base-256), where offsets overflow;
//! - `beyond-file`: four times BYTES, more than the file holds;
//! - `short`: a little over half of BYTES, so the next header falls inside a frame. The checksum
//!   list holds the digest of what the header claims, so the content checks pass.
//!
//! KIND `empty-strings` instead makes a valid bundle whose description is as large as the format
//! allows (8 MiB), out of the JSON that costs a parser most memory per byte: one artifact whose
//! list of omitted platforms holds millions of empty strings (BYTES is ignored).

use std::process::ExitCode;

use bundle_spec::member::{DESCRIPTION_PATH, MAX_PARSED_HEADER_SIZE};
use bundle_spec::test_support::{
    RawMember, blob_path, checksum_list, craft_bundle, description_json, minimal_members,
};

const MTIME: u64 = 1_795_000_000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, bytes, out] = args.as_slice() else {
        eprintln!("usage: crafted_bundle header-size|beyond-file|short BYTES OUT");
        return ExitCode::from(2);
    };
    let Ok(bytes) = bytes.parse::<u64>() else {
        eprintln!("error: BYTES `{bytes}` is not a number");
        return ExitCode::from(2);
    };
    if kind == "empty-strings" {
        return write(out, &empty_strings());
    }
    let data = incompressible(usize::try_from(bytes).expect("BYTES fits in memory"));
    let claimed = match kind.as_str() {
        "header-size" => u64::MAX - 1000,
        "beyond-file" => bytes.saturating_mul(4),
        // Not a multiple of the 32 MiB frame: the member would end inside a frame.
        "short" => bytes / 2 + 4096,
        other => {
            eprintln!("error: unknown KIND `{other}`; hint: header-size, beyond-file or short");
            return ExitCode::from(2);
        }
    };
    let content = &data[..data
        .len()
        .min(usize::try_from(claimed).unwrap_or(usize::MAX))];
    let blob = blob_path(content);
    let mut members = minimal_members(MTIME);
    members.push(RawMember::claiming(&blob, data, claimed, MTIME));
    write(out, &members)
}

fn write(out: &str, members: &[RawMember]) -> ExitCode {
    let file = craft_bundle(&checksum_list(members), members, true);
    if let Err(error) = std::fs::write(out, file) {
        eprintln!("error: cannot write `{out}`: {error}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The smallest bundle, its description padded to the limit with `"",` in one list.
fn empty_strings() -> Vec<RawMember> {
    let mut members = minimal_members(MTIME);
    let mut json: serde_json::Value =
        serde_json::from_slice(&description_json("1.0", MTIME)).expect("json");
    json["artifacts"] = serde_json::json!([{
        "kind": "binary", "name": "x", "version": "1", "reference": "x",
        "digest": format!("sha256:{}", "0".repeat(64)), "size": 1, "omittedPlatforms": "@",
    }]);
    let text = serde_json::to_string(&json).expect("json");
    let room = usize::try_from(MAX_PARSED_HEADER_SIZE).expect("small") - text.len();
    let list = format!("[{}\"\"]", "\"\",".repeat(room / 3 - 1));
    let padded = text.replacen("\"@\"", &list, 1);
    members[0] = RawMember::new(DESCRIPTION_PATH, padded.into_bytes(), MTIME);
    members
}

/// `len` bytes zstd cannot shrink (xorshift64*), so the file is as large as its content.
fn incompressible(len: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut data = Vec::with_capacity(len + 8);
    while data.len() < len {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        data.extend_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    data.truncate(len);
    data
}
