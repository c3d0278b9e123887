//! Crafted image files for tests (here, `reader`'s integration tests and the server's limit
//! tests): tiny bytes whose header declares any shape, so a refusal must come from the header.
//! Public but hidden: not part of the reader's API.

/// CRC-32 (ISO-HDLC, PNG's) of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Appends one PNG chunk: length, `kind`, `data`, CRC.
pub fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A grey 8-bit PNG declaring `w`×`h` (Adam7 when `interlaced`) whose zlib stream holds
/// `zeros` zero bytes in stored blocks: `(w + 1) × h` of them make a complete black image,
/// fewer a truncated one.
pub fn png(w: u32, h: u32, interlaced: bool, zeros: usize) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, u8::from(interlaced)]);
    png_chunk(&mut out, b"IHDR", &ihdr);
    let raw = vec![0u8; zeros];
    let mut z = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (i, b) in blocks.iter().enumerate() {
        z.push(u8::from(i + 1 == blocks.len()));
        z.extend_from_slice(&(b.len() as u16).to_le_bytes());
        z.extend_from_slice(&(!(b.len() as u16)).to_le_bytes());
        z.extend_from_slice(b);
    }
    if blocks.is_empty() {
        // One final empty stored block.
        z.extend_from_slice(&[1, 0, 0, 0xFF, 0xFF]);
    }
    // Adler-32 of zero bytes: a = 1, b = zeros (mod 65521).
    let b = (zeros % 65_521) as u32;
    z.extend_from_slice(&((b << 16) | 1).to_be_bytes());
    png_chunk(&mut out, b"IDAT", &z);
    png_chunk(&mut out, b"IEND", &[]);
    out
}
