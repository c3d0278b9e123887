//! rxing's `HybridBinarizer`, the same black matrix bit for bit, computed a row of blocks at a
//! time instead of a pixel at a time.
//!
//! rxing sets the matrix one bit per call (`BitMatrix::set`, with its index arithmetic) and
//! finds each 8×8 block's range with a scalar min/max per pixel: together a seventh of every
//! read's instructions on our benchmarks, for a step whose result is fixed by the algorithm.
//! Here each block row's column sums and ranges come from whole rows (which vectorise), and
//! each matrix word is one compare of 64 pixels against their thresholds. The QR readers see
//! the same matrix (`matches_rxing` tests it on edge sizes and real slips), so what they read
//! does not change. The 1D row methods are rxing's own (`GlobalHistogramBinarizer`), as in
//! `HybridBinarizer`.

use std::borrow::Cow;
use std::sync::OnceLock;

use rxing::common::{BitArray, BitMatrix, GlobalHistogramBinarizer, LineOrientation};
use rxing::{Binarizer, Luma8Source, LuminanceSource};

/// rxing's block: 8×8 pixels, thresholds averaged over 5×5 blocks.
const BLOCK: usize = 8;
/// Below this side rxing falls back to its global histogram (five blocks).
const MIN_SIDE: usize = BLOCK * 5;
/// A block whose range is at most this is taken for flat background (rxing's constant).
const MIN_DYNAMIC_RANGE: u8 = 24;
/// Bits per matrix word (rxing stores rows in `usize` words, least significant bit first).
const WORD: usize = usize::BITS as usize;

/// A drop-in for `rxing::common::HybridBinarizer` over a borrowed luma slice.
pub(crate) struct FastHybrid<'a> {
    ghb: GlobalHistogramBinarizer<Luma8Source<'a>>,
    matrix: OnceLock<BitMatrix>,
}

impl<'a> FastHybrid<'a> {
    pub(crate) fn new(source: Luma8Source<'a>) -> Self {
        FastHybrid {
            ghb: GlobalHistogramBinarizer::new(source),
            matrix: OnceLock::new(),
        }
    }

    fn small(&self) -> bool {
        self.ghb.get_width() < MIN_SIDE || self.ghb.get_height() < MIN_SIDE
    }
}

impl<'a> Binarizer for FastHybrid<'a> {
    type Source = Luma8Source<'a>;

    fn get_luminance_source(&self) -> &Self::Source {
        self.ghb.get_luminance_source()
    }

    fn get_black_row(&self, y: usize) -> rxing::common::Result<Cow<'_, BitArray>> {
        self.ghb.get_black_row(y)
    }

    fn get_black_row_from_matrix(&self, y: usize) -> rxing::common::Result<Cow<'_, BitArray>> {
        match self.matrix.get() {
            Some(m) => Ok(Cow::Owned(m.getRow(y as u32))),
            None => self.get_black_row(y),
        }
    }

    fn get_black_matrix(&self) -> rxing::common::Result<&BitMatrix> {
        if self.small() {
            // As rxing: its global histogram's matrix, kept as this binarizer's own.
            let m = self.ghb.get_black_matrix()?;
            return Ok(self.matrix.get_or_init(|| m.clone()));
        }
        let source = self.ghb.get_luminance_source();
        let (w, h) = (source.get_width(), source.get_height());
        Ok(self
            .matrix
            .get_or_init(|| black_matrix(&source.get_matrix(), w, h)))
    }

    fn get_black_line(
        &self,
        l: usize,
        lt: LineOrientation,
    ) -> rxing::common::Result<Cow<'_, BitArray>> {
        self.ghb.get_black_line(l, lt)
    }

    fn create_binarizer(&self, source: Self::Source) -> Self {
        Self::new(source)
    }

    fn get_width(&self) -> usize {
        self.ghb.get_width()
    }

    fn get_height(&self) -> usize {
        self.ghb.get_height()
    }
}

/// Where block `b` starts along a side of `len` px: the last block is pulled in to end
/// at the border, overlapping the one before when `len` is not a multiple of 8 (rxing's rule).
fn block_start(b: usize, len: usize) -> usize {
    (b * BLOCK).min(len - BLOCK)
}

/// The black matrix of a `w`×`h` luma image, both sides at least `MIN_SIDE`.
fn black_matrix(lum: &[u8], w: usize, h: usize) -> BitMatrix {
    let (bw, bh) = (w.div_ceil(BLOCK), h.div_ceil(BLOCK));
    let points = black_points(lum, w, h, bw, bh);
    // Each block's threshold: the mean black point of the 5×5 blocks around it (clamped to
    // stay inside), spread over the block's pixels, one block row at a time. Where the last
    // block overlaps the one before (a side not a multiple of 8), rxing sets a pixel's bit for
    // either block; both are clamped to the same 5×5 window, so they share a threshold and the
    // rows of the overlap take it from their own block row.
    let mut matrix = BitMatrix::new(w as u32, h as u32).expect("sides checked");
    let mut bits = BitArray::with_size(w);
    let mut thresholds = vec![0u8; w];
    for by in 0..bh {
        let top = by.clamp(2, bh - 3);
        for bx in 0..bw {
            let left = bx.clamp(2, bw - 3);
            let sum: u32 = (top - 2..=top + 2)
                .map(|y| {
                    points[y * bw + left - 2..=y * bw + left + 2]
                        .iter()
                        .sum::<u32>()
                })
                .sum();
            let x0 = block_start(bx, w);
            // An average of black points, each at most 255.
            thresholds[x0..x0 + BLOCK].fill((sum / 25) as u8);
        }
        for y in by * BLOCK..((by + 1) * BLOCK).min(h) {
            pack_row(&lum[y * w..][..w], &thresholds, &mut bits);
            matrix.setRow(y as u32, &bits);
        }
    }
    matrix
}

/// Row `lum` against `thr` into `bits`: set where the pixel is at most its threshold (`<=`, so
/// a black 0 stays black under a threshold of 0).
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn pack_row(lum: &[u8], thr: &[u8], bits: &mut BitArray) {
    let (l_words, t_words) = (lum.chunks_exact(WORD), thr.chunks_exact(WORD));
    let (l_rest, t_rest) = (l_words.remainder(), t_words.remainder());
    let mut i = 0;
    for (l, t) in l_words.zip(t_words) {
        let mut word = 0usize;
        for (k, (&a, &b)) in l.iter().zip(t).enumerate() {
            word |= usize::from(a <= b) << k;
        }
        bits.setBulk(i, word);
        i += WORD;
    }
    if !l_rest.is_empty() {
        let mut word = 0usize;
        for (k, (&a, &b)) in l_rest.iter().zip(t_rest).enumerate() {
            word |= usize::from(a <= b) << k;
        }
        bits.setBulk(i, word);
    }
}

/// Each 8×8 block's black point, as rxing's `calculateBlackPoints`: the block's mean, or for a
/// flat block (range ≤ 24) half its minimum, raised to its neighbours' black point when its
/// minimum is below that. (rxing stops updating the range once it exceeds 24; a range only
/// grows, so the full one decides the same.)
fn black_points(lum: &[u8], w: usize, h: usize, bw: usize, bh: usize) -> Vec<u32> {
    let mut points = vec![0u32; bw * bh];
    let (mut sum, mut lo, mut hi) = (vec![0u16; w], vec![0u8; w], vec![0u8; w]);
    for by in 0..bh {
        let y0 = block_start(by, h);
        column_stats(&lum[y0 * w..][..BLOCK * w], w, &mut sum, &mut lo, &mut hi);
        for bx in 0..bw {
            let x0 = block_start(bx, w);
            let s: u32 = sum[x0..x0 + BLOCK].iter().map(|&v| u32::from(v)).sum();
            let min = lo[x0..x0 + BLOCK].iter().copied().fold(u8::MAX, u8::min);
            let max = hi[x0..x0 + BLOCK].iter().copied().fold(u8::MIN, u8::max);
            let mut average = s >> 6;
            if max - min <= MIN_DYNAMIC_RANGE {
                average = u32::from(min) / 2;
                if by > 0 && bx > 0 {
                    let neighbours = (points[(by - 1) * bw + bx]
                        + 2 * points[by * bw + bx - 1]
                        + points[(by - 1) * bw + bx - 1])
                        / 4;
                    if u32::from(min) < neighbours {
                        average = neighbours;
                    }
                }
            }
            points[by * bw + bx] = average;
        }
    }
    points
}

/// Per column of the 8 rows in `rows`: the sum, minimum and maximum.
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn column_stats(rows: &[u8], w: usize, sum: &mut [u16], lo: &mut [u8], hi: &mut [u8]) {
    let first = &rows[..w];
    for (((s, l), h), &p) in sum
        .iter_mut()
        .zip(lo.iter_mut())
        .zip(hi.iter_mut())
        .zip(first)
    {
        (*s, *l, *h) = (u16::from(p), p, p);
    }
    for row in rows.chunks_exact(w).skip(1) {
        for (((s, l), h), &p) in sum
            .iter_mut()
            .zip(lo.iter_mut())
            .zip(hi.iter_mut())
            .zip(row)
        {
            *s += u16::from(p);
            *l = (*l).min(p);
            *h = (*h).max(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::GrayImage;
    use rxing::common::HybridBinarizer;

    fn both(g: &GrayImage) -> (BitMatrix, BitMatrix) {
        let (w, h) = g.dimensions();
        let src = || Luma8Source::new_with_slice(g.as_raw(), w, h).unwrap();
        let theirs = HybridBinarizer::new(src())
            .get_black_matrix()
            .unwrap()
            .clone();
        let ours = FastHybrid::new(src()).get_black_matrix().unwrap().clone();
        (ours, theirs)
    }

    /// A deterministic texture with flat areas, edges and noise (flat blocks take the
    /// neighbour rule, busy ones the mean).
    fn texture(w: u32, h: u32, seed: u32) -> GrayImage {
        let mut s = seed.wrapping_mul(2654435761) | 1;
        GrayImage::from_fn(w, h, |x, y| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let base: u32 = if (x / 13 + y / 9) % 3 == 0 { 40 } else { 190 };
            let flat = (x / 50 + y / 40) % 2 == 0;
            image::Luma([(if flat { base } else { base + s % 60 }) as u8])
        })
    }

    #[test]
    fn matches_rxing_on_every_edge_size() {
        // Sides at rxing's minimum, at and around multiples of 8 and of a 64-bit word.
        for (w, h) in [
            (40, 40),
            (41, 47),
            (63, 64),
            (64, 65),
            (65, 129),
            (127, 40),
            (200, 333),
            (517, 301),
        ] {
            for seed in 1..4 {
                let (ours, theirs) = both(&texture(w, h, seed));
                assert!(ours == theirs, "{w}×{h} seed {seed}");
            }
        }
        // Flat images (every block takes the neighbour rule) and a threshold of 0.
        for level in [0u8, 1, 128, 255] {
            let (ours, theirs) = both(&GrayImage::from_pixel(70, 90, image::Luma([level])));
            assert!(ours == theirs, "flat {level}");
        }
    }

    #[test]
    fn small_images_take_rxings_global_histogram() {
        for (w, h) in [(39, 80), (80, 39), (12, 12)] {
            let (ours, theirs) = both(&texture(w, h, 7));
            assert!(ours == theirs, "{w}×{h}");
        }
    }

    #[test]
    fn matches_rxing_on_real_slips() {
        let mut seen = 0;
        for path in crate::corpus_images().iter().step_by(4) {
            let bytes = std::fs::read(path).expect("corpus image");
            let Ok(g) = crate::decode_gray(&bytes, &crate::Limits::default()) else {
                continue;
            };
            let (ours, theirs) = both(&g);
            assert!(ours == theirs, "{}", path.display());
            seen += 1;
        }
        if crate::corpus_images().is_empty() {
            return; // The shared corpus sits beside the checkout on CI and dev machines.
        }
        assert!(seen > 0, "no corpus image decoded");
    }
}
