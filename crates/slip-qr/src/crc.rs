//! CRC-16/CCITT-FALSE, the checksum EMVCo-style payloads carry in their last field.

/// Byte-at-a-time table, built at compile time so checking a payload costs one lookup per byte.
const TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, xorout 0.
pub fn crc16_ccitt_false(data: &[u8]) -> u16 {
    data.iter().fold(0xFFFF, |crc, &b| {
        (crc << 8) ^ TABLE[usize::from((crc >> 8) as u8 ^ b)]
    })
}

/// The 4 upper-case hex digits we write into generated payloads.
pub(crate) fn crc_hex(data: &[u8]) -> String {
    format!("{:04X}", crc16_ccitt_false(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-by-bit reference, to check the table against.
    fn slow(data: &[u8]) -> u16 {
        let mut crc: u16 = 0xFFFF;
        for &b in data {
            crc ^= u16::from(b) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 {
                    (crc << 1) ^ 0x1021
                } else {
                    crc << 1
                };
            }
        }
        crc
    }

    #[test]
    fn catalogue_check_value() {
        assert_eq!(crc16_ccitt_false(b"123456789"), 0x29B1);
        assert_eq!(crc16_ccitt_false(b""), 0xFFFF);
    }

    #[test]
    fn table_matches_bitwise_reference() {
        let data: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        for end in 0..data.len() {
            assert_eq!(crc16_ccitt_false(&data[..end]), slow(&data[..end]));
        }
    }

    #[test]
    fn hex_is_upper_case_and_zero_padded() {
        assert_eq!(crc_hex(b"123456789"), "29B1");
        let h = crc_hex(b"0043000600000101030060222EQH524YNG5BY1A2ROGUBBB5102TH9104");
        assert_eq!(h, "1EE9");
    }
}
