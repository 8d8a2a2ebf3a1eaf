use super::classify::{classify_row, Thresholds};
use super::cpu::push_strong;
use super::gpu::{nms_tiles, spread, Spread, NMS_BLOCK, NMS_TILE, TALL_BLOCK, UNION_WARPS};
use super::*;
use crate::parallel;
use histopipe_gpu::kernels;
/// Which neighbours non-maximum suppression compares with, from the gradient (OpenCV's sectors):
/// 0 left/right, 1 above/below, 2 the diagonal (-1,-1)/(+1,+1), 3 the diagonal (+1,-1)/(-1,+1).
fn direction(dx: i32, dy: i32) -> u8 {
    let x = dx.abs();
    let y = dy.abs() << 15;
    let tg22x = x * TG22;
    if y < tg22x {
        0
    } else if y > tg22x + (x << 16) {
        1
    } else if (dx ^ dy) < 0 {
        3
    } else {
        2
    }
}

/// Stage 3 pixel by pixel, with branches: the direction's sector, then its two neighbours.
fn classify_reference(t: Thresholds, [ma, mc, mb]: [&[i32]; 3], dx: &[i32], dy: &[i32]) -> Vec<u8> {
    (0..dx.len())
        .map(|x| {
            let m = mc[x + 1];
            if m <= t.low {
                return NONE;
            }
            let keep = match direction(dx[x], dy[x]) {
                0 => m > mc[x] && m >= mc[x + 2],
                1 => m > ma[x + 1] && m >= mb[x + 1],
                2 => m > ma[x] && m > mb[x + 2],
                _ => m > ma[x + 2] && m > mb[x],
            };
            match (keep, m > t.high) {
                (false, _) => NONE,
                (true, false) => WEAK,
                (true, true) => STRONG,
            }
        })
        .collect()
}

#[test]
fn branchless_suppression_is_the_sectors_test() {
    let mut rng = fastrand::Rng::with_seed(13);
    for w in [1, 7, 8, 9, 64, 333] {
        for spread in [3, 40, 1020] {
            let grad =
                |rng: &mut fastrand::Rng| (0..w).map(|_| rng.i32(-spread..=spread)).collect::<Vec<_>>();
            let (dx, dy) = (grad(&mut rng), grad(&mut rng));
            // Magnitudes often equal to their neighbours, and some at the thresholds.
            let mags: Vec<Vec<i32>> = (0..3)
                .map(|_| {
                    let mut m: Vec<i32> = (0..w + 2).map(|_| rng.i32(0..=12) * 10).collect();
                    (m[0], m[w + 1]) = (0, 0);
                    m
                })
                .collect();
            let t = Thresholds { l2: false, low: 40, high: 90 };
            let m = [&mags[0][..], &mags[1][..], &mags[2][..]];
            let mut line = vec![NONE; w];
            classify_row(t, m, &dx, &dy, &mut line);
            assert_eq!(line, classify_reference(t, m, &dx, &dy), "w {w}, spread {spread}");
            let mut stack = Vec::new();
            push_strong(&line, 5, &mut stack);
            let strong: Vec<usize> = (0..w).filter(|&x| line[x] == STRONG).map(|x| x + 5).collect();
            assert_eq!(stack, strong);
        }
    }
}

#[test]
fn tg22_is_opencvs_constant() {
    assert_eq!(TG22, (0.414_213_562_373_095_05_f64 * 32768.0 + 0.5) as i32);
}

#[test]
fn thresholds_follow_opencv() {
    let c = |low, high, l2| Canny { low, high, l2, blur: None }.thresholds();
    assert_eq!(c(50.7, 150.2, false), (50, 150));
    assert_eq!(c(150.0, 50.0, false), (50, 150));
    assert_eq!(c(10.5, 40000.0, true), (110, 32767 * 32767));
}

#[test]
fn a_step_gives_one_thin_edge() {
    // Left half 0, right half 200: the step between columns 3 and 4.
    let (w, h) = (8, 5);
    let px: Vec<u8> = (0..w * h).map(|i| if i % w >= 4 { 200 } else { 0 }).collect();
    let f = Frame::new(w, h, 255, Pixels::U8(px.into()));
    let out = Canny { low: 50.0, high: 100.0, l2: false, blur: None }.cpu(&f).unwrap();
    let Pixels::U8(e) = out.pixels else { panic!() };
    for y in 0..h {
        let row: Vec<u8> = e[y * w..(y + 1) * w].to_vec();
        assert_eq!(row, vec![0, 0, 0, 255, 0, 0, 0, 0], "row {y}");
    }
}

#[test]
fn tile_shapes_match_the_kernel() {
    let text = kernels::CANNY.text;
    for (name, v) in [
        ("CANNY_TW", NMS_TILE.0),
        ("CANNY_TH", NMS_TILE.1),
        ("CANNY_BX", NMS_BLOCK.0),
        ("CANNY_BY", NMS_BLOCK.1),
        ("CANNY_TALL_BY", TALL_BLOCK.1),
        ("CANNY_UNION_WARPS", UNION_WARPS),
    ] {
        assert!(text.contains(&format!("#define {name} {v}\n")), "{name} is not {v} in canny.cu");
    }
}

/// The kernels run tall where the grid fits the GPU in one wave of blocks of 1024 threads (two an
/// SM of 2048), wide where it fits in three waves of 256 threads (eight an SM), one warp a tile
/// beyond.
#[test]
fn the_kernels_spread_a_tiles_work_by_the_grids_waves() {
    assert_eq!(spread(205, 132, 2048), Spread::TallBlock);
    assert_eq!(spread(264, 132, 2048), Spread::TallBlock);
    assert_eq!(spread(265, 132, 2048), Spread::Block);
    assert_eq!(spread(2140, 132, 2048), Spread::Block);
    assert_eq!(spread(3168, 132, 2048), Spread::Block);
    assert_eq!(spread(3169, 132, 2048), Spread::Warp);
    assert_eq!(spread(6240, 132, 2048), Spread::Warp);
    assert_eq!(spread(1, 1, 1024), Spread::TallBlock);
    assert_eq!(spread(2, 1, 1024), Spread::Block);
    assert_eq!(spread(4, 1, 256), Spread::Warp);
    assert_eq!(spread(3, 1, 256), Spread::Block);
}

/// Every way the kernels run (wide: each tile's labels, unions and finds spread over its block of
/// 8 or 32 warps; or one warp a tile) gives the CPU's edges: the camera scaled up by nearest neighbour (the
/// benchmark's real content: long edges, many weak components on tile rings), structured and
/// random frames, thresholds that leave most kept pixels weak, each frame twice on one plan.
#[test]
fn every_way_on_the_gpu_is_the_cpus() {
    use histopipe_frame::{FrameReader, ReadOptions};
    let Some(gpu) = histopipe_gpu::testing::gpu_or_skip() else { return };
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/camera.pgm");
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let camera = FrameReader::new(file, ReadOptions::default()).next_frame().unwrap().unwrap();
    let Pixels::U8(bytes) = &camera.pixels else { panic!("camera.pgm is 8-bit") };
    let scaled = |w: usize, h: usize| {
        let (cw, ch) = (camera.width, camera.height);
        let px = (0..w * h).map(|i| bytes[(i / w * ch / h) * cw + (i % w) * cw / w]).collect();
        Frame::new(w, h, 255, Pixels::U8(px))
    };
    let mut rng = fastrand::Rng::with_seed(31);
    let frames = [scaled(640, 651), scaled(1283, 1707), parallel::testing::frame(&mut rng, 333, 181, 255)];
    for frame in &frames {
        let (w, h) = (frame.width, frame.height);
        let Pixels::U8(input) = &frame.pixels else { unreachable!() };
        let src = gpu.upload::<u8>("test.in", input).unwrap();
        let mut dst = gpu.buffer::<u8>("test.out", w * h).unwrap();
        for canny in [
            Canny { low: 50.0, high: 150.0, l2: false, blur: None },
            Canny { low: 10.0, high: 400.0, l2: false, blur: None },
            Canny { low: 20.0, high: 120.0, l2: true, blur: Some(1.0) },
        ] {
            let want = canny.cpu(frame).unwrap();
            let Pixels::U8(want) = &want.pixels else { unreachable!() };
            for spread in [Spread::Warp, Spread::Block, Spread::TallBlock] {
                let mut plan = canny.plan(&gpu, w, h).unwrap();
                plan.set_spread(spread);
                for round in 0..2 {
                    plan.queue(&src, &mut dst).unwrap();
                    let got = gpu.download_vec(&dst, w * h).unwrap();
                    assert!(got[..] == want[..], "{w}x{h} {canny:?} {spread:?}, round {round}");
                }
            }
        }
    }
}

#[test]
fn the_gpu_takes_frames_of_fewer_than_2_to_the_32_pixels_of_any_shape() {
    let most = u32::MAX as usize;
    for (w, h) in [(65536, 32769), (most, 1), (1, most), (3, most / 3), (most / 4096, 4096), (1, 1)] {
        assert!(Canny::gpu_size_ok(w, h), "{w}x{h}");
        let tiles = nms_tiles(w, h).unwrap();
        assert_eq!(tiles as usize, w.div_ceil(128) * h.div_ceil(16), "{w}x{h}");
        assert!(tiles < 1 << 29);
    }
    // Taller than 65535 tile rows: the grid is one-dimensional.
    assert_eq!(nms_tiles(1, 1 << 31), Some(1 << 27));
    for (w, h) in [(65536, 65536), (most + 1, 1), (1, most + 1), (usize::MAX, 2)] {
        assert!(!Canny::gpu_size_ok(w, h), "{w}x{h}");
        assert!(Canny::checked_tiles(w, h).unwrap_err().to_string().contains("fewer than 2^32 pixels"));
    }
    assert_eq!(Canny::bit_words(1, most), most);
    assert_eq!(Canny::bit_words(most, 1), 1 << 27);
    assert_eq!(Canny::bit_words(33, 7), 14);
    assert_eq!(Canny::parent_len(most, 1), 1 << 32);
    assert_eq!(Canny::parent_len(33, 7), 232);
}

/// Split over any number of threads, the edges are the one thread's: random frames (dense,
/// short edges) and smooth ones whose long edges cross many bands, with and without blur.
#[test]
fn every_split_finds_the_edges_of_one_thread() {
    let mut rng = fastrand::Rng::with_seed(29);
    for (w, h) in parallel::testing::sizes(&mut rng) {
        let noise = parallel::testing::frame(&mut rng, w, h, 255);
        let rings: Vec<u8> = (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as f64 - w as f64 / 3.0, (i / w) as f64 - h as f64 / 2.0);
                let ring = ((x * x + y * y).sqrt() / 9.0).sin();
                (128.0 + 100.0 * ring + rng.f64() * 20.0) as u8
            })
            .collect();
        let rings = Frame::new(w, h, 255, Pixels::U8(rings.into()));
        for (f, low, high) in [(&noise, 50.0, 150.0), (&rings, 20.0, 90.0), (&rings, 5.0, 200.0)] {
            for (l2, blur) in [(false, None), (true, None), (false, Some(1.2))] {
                let canny = Canny { low, high, l2, blur };
                let what = format!("{w}x{h} {canny:?}");
                parallel::testing::same_on_each_pool(&what, || canny.cpu(f).unwrap());
            }
        }
    }
}

#[test]
fn blur_weights_sum_to_one() {
    let k = gaussian_weights(1.4);
    assert_eq!(k.len(), 2 * 5 + 1);
    assert!((k.iter().map(|&v| v as f64).sum::<f64>() - 1.0).abs() < 1e-6);
    let flat = blur_cpu(&[77; 12], 4, 3, &k);
    assert!(flat.iter().all(|&v| v == 77));
}

/// A model on the CPU of the GPU's hysteresis (canny.cu: canny_grow, the labels of canny_nms,
/// canny_union, canny_finish): a tile's bits are 32 lanes, lane l row l / 2, half l % 2, 64 pixels
/// each; the union-finds take their links in random orders.
mod bit_model {
    const TW: usize = 128;
    const TH: usize = 16;
    /// A parent entry canny_nms does not write (reading one would be a read of uninitialised memory).
    const UNWRITTEN: usize = usize::MAX;

    fn fill(kept: u64, seeds: u64) -> u64 {
        ((kept.wrapping_add(seeds) ^ kept) | seeds) & kept
    }

    /// canny_grow over the 32 lanes of a tile.
    fn grow(kept: &[u64; 32], mut edge: [u64; 32]) -> [u64; 32] {
        loop {
            let v: Vec<u64> = (0..32)
                .map(|l| {
                    let up = if l < 2 { 0 } else { edge[l - 2] };
                    let down = if l >= 30 { 0 } else { edge[l + 2] };
                    edge[l] | up | down
                })
                .collect();
            let mut grown = [0u64; 32];
            for l in 0..32 {
                let other = v[l ^ 1];
                let (left, right) = if l & 1 == 1 { (other >> 63, 0) } else { (0, other & 1) };
                let d = v[l] | v[l] << 1 | v[l] >> 1 | left | right << 63;
                let seeds = edge[l] | (d & kept[l]);
                grown[l] =
                    fill(kept[l], seeds) | fill(kept[l].reverse_bits(), seeds.reverse_bits()).reverse_bits();
            }
            if grown == edge {
                return edge;
            }
            edge = grown;
        }
    }

    /// canny_ring.
    fn ring(l: usize) -> u64 {
        match (l / 2, l & 1) {
            (0, _) | (15, _) => !0,
            (_, 1) => 1 << 63,
            _ => 1,
        }
    }

    /// canny_link: of the pairs from p (which starts its run or not) to q before, beside and
    /// after it in the next line (each kept or not; the last two starting their runs or not),
    /// those that join two runs.
    fn link(p_starts: bool, q: [bool; 3], starts: [bool; 2]) -> [bool; 3] {
        [p_starts && q[0], p_starts && q[1] && starts[0], q[2] && starts[1]]
    }

    /// canny_find (without the halving, which changes no root).
    fn find(parent: &[usize], mut x: usize) -> usize {
        loop {
            let p = parent[x];
            assert_ne!(p, UNWRITTEN, "element {x} read but never written");
            if p == x {
                return x;
            }
            x = p;
        }
    }

    /// The labels of a tile's weak ring pixels (`pending`, of the weak pixels `weak`) as canny_nms
    /// makes them for a grid of many waves: one in-tile component at a time, from the first
    /// pending pixel, every pending pixel it reaches pointed at that one. Pairs ((lane, bit) of a
    /// pixel, (lane, bit) of its representative).
    pub fn labels_one_at_a_time(
        weak: &[u64; 32],
        mut pending: [u64; 32],
    ) -> Vec<((usize, u32), (usize, u32))> {
        let mut labels = Vec::new();
        while let Some(first) = (0..32).find(|&l| pending[l] != 0) {
            let mut seed = [0u64; 32];
            seed[first] = pending[first] & pending[first].wrapping_neg();
            let rep = (first, pending[first].trailing_zeros());
            let comp = grow(weak, seed);
            for l in 0..32 {
                let mut reached = comp[l] & pending[l];
                pending[l] &= !reached;
                while reached != 0 {
                    labels.push(((l, reached.trailing_zeros()), rep));
                    reached &= reached - 1;
                }
            }
        }
        labels
    }

    /// The same labels as canny_nms_wide and canny_nms_tall make them, with `warps` warps a block:
    /// in rounds, warp i growing the components of the i-th and (i + warps)-th pending pixels
    /// that start a run (none pending just before in the row, nor just above), and the warp whose
    /// seed is the first pending pixel its growth reached labelling that component.
    pub fn labels_in_rounds(
        weak: &[u64; 32],
        mut pending: [u64; 32],
        warps: usize,
    ) -> Vec<((usize, u32), (usize, u32))> {
        let mut labels = Vec::new();
        loop {
            let starts: Vec<(usize, u32)> = (0..32)
                .flat_map(|l| {
                    let above = if l >= 2 { pending[l - 2] } else { 0 };
                    let beside = if l & 1 == 1 { pending[l ^ 1] >> 63 } else { 0 };
                    let mut s = pending[l] & !(pending[l] << 1) & !above & !beside;
                    std::iter::from_fn(move || {
                        let b = (s != 0).then(|| s.trailing_zeros())?;
                        s &= s - 1;
                        Some((l, b))
                    })
                })
                .collect();
            if starts.is_empty() {
                return labels;
            }
            let mut taken = [0u64; 32];
            for slot in (0..warps).flat_map(|i| [i, i + warps]).filter(|&i| i < starts.len()) {
                let (sl, sb) = starts[slot];
                let mut seed = [0u64; 32];
                seed[sl] = 1 << sb;
                let comp = grow(weak, seed);
                let reached: [u64; 32] = std::array::from_fn(|l| comp[l] & pending[l]);
                let first = (0..32).find(|&l| reached[l] != 0).expect("the seed reaches itself");
                if (first, reached[first].trailing_zeros()) == (sl, sb) {
                    for (l, &r) in reached.iter().enumerate() {
                        let mut r = r;
                        while r != 0 {
                            labels.push(((l, r.trailing_zeros()), (sl, sb)));
                            r &= r - 1;
                        }
                    }
                }
                for l in 0..32 {
                    taken[l] |= reached[l];
                }
            }
            for l in 0..32 {
                pending[l] &= !taken[l];
            }
        }
    }

    /// The edges by the model: canny_nms's growth and labels within each tile (one component at a
    /// time, or, with `warps`, in canny_nms_wide's rounds), canny_union's pairs in an order `rng`
    /// shuffles, then canny_finish.
    pub fn edges(map: &[u8], w: usize, h: usize, rng: &mut fastrand::Rng, warps: Option<usize>) -> Vec<bool> {
        let words = w.div_ceil(32);
        let (across, down) = (w.div_ceil(TW), h.div_ceil(TH));
        let (mut kept, mut edge) = (vec![0u32; words * h], vec![0u32; words * h]);
        let mut parent = vec![UNWRITTEN; w * h + 1];
        let element = |x: usize, y: usize| 1 + y * w + x;
        let tile_bits = |bits: &[u32], tile: usize| {
            let (x0, y0) = ((tile % across) * TW, (tile / across) * TH);
            let mut out = [0u64; 32];
            for (l, o) in out.iter_mut().enumerate() {
                let (y, wx) = (y0 + l / 2, x0 / 32 + 2 * (l & 1));
                for (j, shift) in [(wx, 0), (wx + 1, 32)] {
                    if y < h && j < words {
                        *o |= (bits[y * words + j] as u64) << shift;
                    }
                }
            }
            out
        };
        parent[0] = 0;
        for tile in 0..across * down {
            let (x0, y0) = ((tile % across) * TW, (tile / across) * TH);
            let (mut k, mut s) = ([0u64; 32], [0u64; 32]);
            for l in 0..32 {
                let y = y0 + l / 2;
                for b in 0..64 {
                    let x = x0 + 64 * (l & 1) + b;
                    if x < w && y < h {
                        k[l] |= ((map[y * w + x] != super::NONE) as u64) << b;
                        s[l] |= ((map[y * w + x] == super::STRONG) as u64) << b;
                    }
                }
            }
            let grown = grow(&k, s);
            for l in 0..32 {
                let (y, wx) = (y0 + l / 2, x0 / 32 + 2 * (l & 1));
                for (j, shift) in [(wx, 0), (wx + 1, 32)] {
                    if y < h && j < words {
                        edge[y * words + j] = (grown[l] >> shift) as u32;
                        kept[y * words + j] = (k[l] >> shift) as u32;
                    }
                }
            }
            // canny_nms's labels: each in-tile component of weak pixels that holds ring pixels
            // points them at the first of them.
            let weak: [u64; 32] = std::array::from_fn(|l| k[l] & !grown[l]);
            let pending: [u64; 32] = std::array::from_fn(|l| weak[l] & ring(l));
            let labels = match warps {
                None => labels_one_at_a_time(&weak, pending),
                Some(warps) => labels_in_rounds(&weak, pending, warps),
            };
            let pixel = |(l, b): (usize, u32)| (x0 + 64 * (l & 1) + b as usize, y0 + l / 2);
            for (at, rep) in labels {
                let ((x, y), (rx, ry)) = (pixel(at), pixel(rep));
                assert_eq!(parent[element(x, y)], UNWRITTEN, "({x}, {y}) labelled twice");
                parent[element(x, y)] = element(rx, ry);
            }
        }
        // canny_union's pairs (canny_link's across each tile's bottom and right borders), in any
        // order.
        let bit = |bits: &[u32], x: usize, y: usize| bits[y * words + x / 32] >> (x % 32) & 1 == 1;
        let mut pairs = Vec::new();
        for tile in 0..across * down {
            let (x0, y0) = ((tile % across) * TW, (tile / across) * TH);
            let (yb, xr) = (y0 + TH - 1, x0 + TW - 1);
            let kept_at = |x: usize, y: usize| x < w && y < h && bit(&kept, x, y);
            if yb + 1 < h {
                for x in (x0..x0 + TW).filter(|&x| kept_at(x, yb)) {
                    let left = x > 0 && kept_at(x - 1, yb + 1);
                    let (mid, right) = (kept_at(x, yb + 1), kept_at(x + 1, yb + 1));
                    let l = link(
                        x == x0 || !kept_at(x - 1, yb),
                        [left, mid, right],
                        [x == x0 || !left, x == xr || !mid],
                    );
                    for (i, qx) in [x.wrapping_sub(1), x, x + 1].into_iter().enumerate() {
                        if l[i] {
                            pairs.push(((x, yb), (qx, yb + 1)));
                        }
                    }
                }
            }
            if xr + 1 < w {
                let end = (y0 + TH).min(h);
                for y in (y0..end).filter(|&y| kept_at(xr, y)) {
                    let up = y > y0 && kept_at(xr + 1, y - 1);
                    let (mid, down) = (kept_at(xr + 1, y), y + 1 < end && kept_at(xr + 1, y + 1));
                    let l = link(y == y0 || !kept_at(xr, y - 1), [up, mid, down], [y == y0 || !up, !mid]);
                    for (i, qy) in [y.wrapping_sub(1), y, y + 1].into_iter().enumerate() {
                        if l[i] {
                            pairs.push(((xr, y), (xr + 1, qy)));
                        }
                    }
                }
            }
        }
        rng.shuffle(&mut pairs);
        for ((px, py), (qx, qy)) in pairs {
            assert!(px / TW != qx / TW || py / TH != qy / TH, "a pair within one tile");
            if !bit(&kept, px, py) || !bit(&kept, qx, qy) {
                continue;
            }
            let (ep, eq) = (bit(&edge, px, py), bit(&edge, qx, qy));
            if ep && eq {
                continue;
            }
            let a = find(&parent, if ep { 0 } else { element(px, py) });
            let b = find(&parent, if eq { 0 } else { element(qx, qy) });
            parent[a.max(b)] = a.min(b);
        }
        // canny_finish.
        let mut out = vec![false; w * h];
        for tile in 0..across * down {
            let (x0, y0) = ((tile % across) * TW, (tile / across) * TH);
            let (k, mut e) = (tile_bits(&kept, tile), tile_bits(&edge, tile));
            // Each weak ring pixel that starts a run along the ring (along rows 0 and TH - 1, down
            // the first and last columns).
            let weak = |r: isize, c: isize| {
                (0..TH as isize).contains(&r)
                    && (0..TW as isize).contains(&c)
                    && (k[2 * r as usize + c as usize / 64] & !e[2 * r as usize + c as usize / 64])
                        >> (c % 64)
                        & 1
                        == 1
            };
            let mut seeds = [0u64; 32];
            for r in 0..TH as isize {
                for c in 0..TW as isize {
                    let on_ring = r == 0 || r == TH as isize - 1 || c == 0 || c == TW as isize - 1;
                    let follows =
                        if r == 0 || r == TH as isize - 1 { weak(r, c - 1) } else { weak(r - 1, c) };
                    if !on_ring || !weak(r, c) || follows {
                        continue;
                    }
                    if find(&parent, element(x0 + c as usize, y0 + r as usize)) == 0 {
                        seeds[2 * r as usize + c as usize / 64] |= 1 << (c % 64);
                    }
                }
            }
            if seeds.iter().any(|&s| s != 0) {
                e = grow(&k, std::array::from_fn(|l| e[l] | seeds[l]));
            }
            for (l, &bits) in e.iter().enumerate() {
                for b in 0..64 {
                    let (x, y) = (x0 + 64 * (l & 1) + b, y0 + l / 2);
                    if x < w && y < h {
                        out[y * w + x] = bits >> b & 1 == 1;
                    }
                }
            }
        }
        out
    }
}

/// The edges by flooding from the strong pixels through kept 8-neighbours.
fn flood_reference(map: &[u8], w: usize, h: usize) -> Vec<bool> {
    let mut on: Vec<bool> = map.iter().map(|&v| v == STRONG).collect();
    let mut stack: Vec<usize> = (0..w * h).filter(|&i| on[i]).collect();
    while let Some(i) = stack.pop() {
        let (x, y) = ((i % w) as isize, (i / w) as isize);
        for (dx, dy) in [(-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)] {
            let (nx, ny) = (x + dx, y + dy);
            if nx >= 0 && ny >= 0 && (nx as usize) < w && (ny as usize) < h {
                let j = ny as usize * w + nx as usize;
                if !on[j] && map[j] != NONE {
                    on[j] = true;
                    stack.push(j);
                }
            }
        }
    }
    on
}

/// The GPU's hysteresis on bits, modelled lane for lane on the CPU and run with tiles claimed in
/// random orders, finds the flood's edges: random maps of every density, and snakes, spirals and
/// combs that cross many tiles, on frames that are not multiples of the tile.
#[test]
fn the_gpus_bit_hysteresis_finds_the_floods_edges() {
    let mut rng = fastrand::Rng::with_seed(30);
    let mut maps: Vec<(usize, usize, Vec<u8>)> = Vec::new();
    for (w, h) in [(1, 1), (1, 300), (300, 1), (129, 17), (128, 16), (200, 70), (383, 49), (64, 64)] {
        for density in [0.05, 0.3, 0.5, 0.9] {
            let map = (0..w * h)
                .map(|_| match rng.f64() {
                    r if r < density * 0.03 => STRONG,
                    r if r < density => WEAK,
                    _ => NONE,
                })
                .collect();
            maps.push((w, h, map));
        }
    }
    // A square spiral of weak pixels, strong at its centre only; a vertical comb (one path up
    // and down every other column) strong at one end; a checkerboard of weak pixels (8-connected
    // through corners) with one strong pixel; the same with the strong pixel at the far end.
    let (w, h) = (333, 181);
    let mut spiral = vec![NONE; w * h];
    let (mut x, mut y, mut len, mut dir) = (w as isize / 2, h as isize / 2, 1, 0);
    spiral[y as usize * w + x as usize] = STRONG;
    'outer: loop {
        for _ in 0..2 {
            for _ in 0..len {
                let (dx, dy) = [(1, 0), (0, 1), (-1, 0), (0, -1)][dir % 4];
                for _ in 0..2 {
                    (x, y) = (x + dx, y + dy);
                    if x < 0 || y < 0 || x >= w as isize || y >= h as isize {
                        break 'outer;
                    }
                    spiral[y as usize * w + x as usize] = WEAK;
                }
            }
            dir += 1;
        }
        len += 2;
    }
    maps.push((w, h, spiral));
    let mut comb = vec![NONE; w * h];
    for x in (0..w).step_by(2) {
        for y in 1..h - 1 {
            comb[y * w + x] = WEAK;
        }
        let turn = if (x / 2) % 2 == 0 { h - 1 } else { 0 };
        comb[turn * w + x] = WEAK;
        if x + 1 < w {
            comb[turn * w + x + 1] = WEAK;
        }
    }
    comb[w - 1] = STRONG;
    maps.push((w, h, comb));
    for corner in [0, w * h - 1] {
        let mut board: Vec<u8> =
            (0..w * h).map(|i| if (i % w + i / w) % 2 == 0 { WEAK } else { NONE }).collect();
        board[corner] = STRONG;
        maps.push((w, h, board));
    }
    for (w, h, map) in &maps {
        let want = flood_reference(map, *w, *h);
        if map.len() == 333 * 181 {
            assert!(want.iter().filter(|&&e| e).count() > 5000, "{w}x{h}: a long path expected");
        }
        // Labelled one component at a time, and in canny_nms_wide's and canny_nms_tall's rounds.
        for warps in [None, Some(8), Some(32)] {
            assert!(bit_model::edges(map, *w, *h, &mut rng, warps) == want, "{w}x{h}, {warps:?} warps");
        }
    }
}

/// canny_nms_wide's and canny_nms_tall's rounds (the starts of runs as seeds, two a warp) label
/// every weak ring pixel once, with the representative that one component at a time gives it:
/// random tiles of every density, and a tile whose ring is one run of weak pixels.
#[test]
fn the_wide_labels_rounds_label_as_one_component_at_a_time() {
    let mut rng = fastrand::Rng::with_seed(31);
    let ring = |l: usize| match (l / 2, l & 1) {
        (0, _) | (15, _) => !0u64,
        (_, 1) => 1 << 63,
        _ => 1,
    };
    let mut tiles: Vec<[u64; 32]> = Vec::new();
    for density in [0.02, 0.1, 0.3, 0.45, 0.6, 0.9] {
        for _ in 0..40 {
            tiles.push(std::array::from_fn(|_| {
                (0..64).fold(0u64, |v, b| v | ((rng.f64() < density) as u64) << b)
            }));
        }
    }
    tiles.push(std::array::from_fn(ring));
    let mut many_rounds = 0;
    for weak in &tiles {
        let pending: [u64; 32] = std::array::from_fn(|l| weak[l] & ring(l));
        let mut want = bit_model::labels_one_at_a_time(weak, pending);
        want.sort();
        for warps in [1, 8, 32] {
            let mut got = bit_model::labels_in_rounds(weak, pending, warps);
            got.sort();
            assert_eq!(got, want, "{warps} warps");
        }
        // Tiles with more components on the ring than one round of 8 warps takes.
        many_rounds +=
            (want.iter().map(|&(_, rep)| rep).collect::<std::collections::HashSet<_>>().len() > 16) as u32;
    }
    assert!(many_rounds > 10, "only {many_rounds} tiles took several rounds");
}
