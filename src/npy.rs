//! A table as a NumPy `.npy` array (format 1.0, little-endian, C order): the tables' own small
//! writer, until the frame crate's NPY encoder can take them.

/// An array's samples: unsigned 64-bit counts or 64-bit floats.
pub enum NpyData<'a> {
    U64(&'a [u64]),
    F64(&'a [f64]),
}

/// The `.npy` file of an array of `shape` holding `data` in C order.
pub fn encode(shape: &[usize], data: NpyData<'_>) -> Vec<u8> {
    let (descr, len) = match &data {
        NpyData::U64(v) => ("<u8", v.len()),
        NpyData::F64(v) => ("<f8", v.len()),
    };
    assert_eq!(shape.iter().product::<usize>(), len, "the shape holds the data");
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6), version (2) and the header's length (2), then the header, padded with spaces to
    // a multiple of 64 bytes and ended by a newline.
    let total = (10 + header.len() + 1).next_multiple_of(64);
    header.push_str(&" ".repeat(total - 10 - header.len() - 1));
    header.push('\n');
    let mut out = Vec::with_capacity(total + len * 8);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    match data {
        NpyData::U64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        NpyData::F64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_padded_to_64() {
        let out = encode(&[2, 3], NpyData::U64(&[1, 2, 3, 4, 5, 6]));
        assert_eq!(&out[..8], b"\x93NUMPY\x01\x00");
        let len = u16::from_le_bytes([out[8], out[9]]) as usize;
        assert_eq!((10 + len) % 64, 0);
        let header = std::str::from_utf8(&out[10..10 + len]).unwrap();
        assert!(header.starts_with("{'descr': '<u8', 'fortran_order': False, 'shape': (2, 3), }"));
        assert!(header.ends_with('\n'));
        assert_eq!(out.len(), 10 + len + 48);
        let one = encode(&[1], NpyData::F64(&[0.5]));
        assert!(
            std::str::from_utf8(&one[10..]).unwrap_or("").is_empty() || one.windows(4).any(|w| w == b"(1,)")
        );
    }
}
