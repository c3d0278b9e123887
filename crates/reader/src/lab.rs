//! Strategy lab (ignored test): which preparations read which images.
use super::*;

fn stretch(g: &GrayImage) -> GrayImage {
    let s = Stats::of(g);
    let (lo, hi) = (i32::from(s.lo), i32::from(s.hi).max(i32::from(s.lo) + 1));
    let mut out = g.clone();
    out.iter_mut().for_each(|p| {
        *p = ((i32::from(*p) - lo) * 255 / (hi - lo)).clamp(0, 255) as u8;
    });
    out
}

fn median3(g: &GrayImage) -> GrayImage {
    let (w, h) = (g.width(), g.height());
    let mut out = g.clone();
    for y in 0..h {
        for x in 0..w {
            let mut v = [0u8; 9];
            let mut k = 0;
            for dy in -1i32..=1 {
                for dx in -1i32..=1 {
                    let xx = (x as i32 + dx).clamp(0, w as i32 - 1) as u32;
                    let yy = (y as i32 + dy).clamp(0, h as i32 - 1) as u32;
                    v[k] = g.get_pixel(xx, yy).0[0];
                    k += 1;
                }
            }
            v.sort();
            out.put_pixel(x, y, image::Luma([v[4]]));
        }
    }
    out
}

type LabPrep = (&'static str, fn(&GrayImage, f32) -> GrayImage);

const PREPS: &[LabPrep] = &[
    ("plain", |g, _| g.clone()),
    ("stretch", |g, _| stretch(g)),
    ("close2", |g, _| close_dark(g, 2)),
    ("blur3", |g, _| box_blur3(g)),
    ("median3", |g, _| median3(g)),
    ("otsu", |g, _| otsu_threshold(g)),
    ("lm-4m", |g, m| {
        local_mean_threshold_reference_radius(g, 0, (4.0 * m) as usize)
    }),
    ("lm-8m", |g, m| {
        local_mean_threshold_reference_radius(g, 0, (8.0 * m) as usize)
    }),
    ("lanczos2", |g, _| upscale_lanczos(g, 2)),
    ("bil2", |g, _| upscale_bilinear2(g)),
    ("blur3+lanczos2", |g, _| upscale_lanczos(&box_blur3(g), 2)),
    ("stretch+lanczos2", |g, _| upscale_lanczos(&stretch(g), 2)),
    ("median3+lanczos2", |g, _| upscale_lanczos(&median3(g), 2)),
    ("close1+lanczos2", |g, _| {
        upscale_lanczos(&close_dark(g, 1), 2)
    }),
    ("lanczos2+close2", |g, _| {
        close_dark(&upscale_lanczos(g, 2), 2)
    }),
    ("lanczos2+close3", |g, _| {
        close_dark(&upscale_lanczos(g, 2), 3)
    }),
    ("blur3+lanczos2+lm8", |g, m| {
        local_mean_threshold_reference_radius(
            &upscale_lanczos(&box_blur3(g), 2),
            0,
            (16.0 * m) as usize,
        )
    }),
    ("lanczos3", |g, _| upscale_lanczos(g, 3)),
    ("half", |g, _| box_downscale(g, 2)),
];

/// The labs' inputs: `LAB_DIR` (images and `manifest.json`), the truth boxes read from the file
/// `LAB_BOXES`, and `LAB_ONLY` (comma-separated file names, or empty).
fn lab_env() -> (String, serde_json::Value, String) {
    let dir = std::env::var("LAB_DIR").unwrap();
    let boxes =
        serde_json::from_slice(&std::fs::read(std::env::var("LAB_BOXES").unwrap()).unwrap())
            .unwrap();
    (dir, boxes, std::env::var("LAB_ONLY").unwrap_or_default())
}

/// A truth box's corner points (`{"pts": [[x, y], ...]}`).
fn truth_corners(b: &serde_json::Value) -> Vec<(f32, f32)> {
    b["pts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap() as f32, p[1].as_f64().unwrap() as f32))
        .collect()
}

#[test]
#[ignore]
fn strategy_lab() {
    let (dir, boxes, only) = lab_env();
    let man: serde_json::Value =
        serde_json::from_slice(&std::fs::read(format!("{dir}/manifest.json")).unwrap()).unwrap();
    let mut wins: std::collections::BTreeMap<String, usize> = Default::default();
    for m in man.as_array().unwrap() {
        let file = m["file"].as_str().unwrap();
        if !only.is_empty() && !only.split(',').any(|o| file.contains(o)) {
            continue;
        }
        let payload = m["payload"].as_str().unwrap();
        let bytes = std::fs::read(format!("{dir}/{file}")).unwrap();
        let full = crate::decode_gray(&bytes, &crate::Limits::default()).unwrap();
        let ours = crate::read_qr(&bytes, &crate::Limits::default())
            .unwrap_or_default()
            .contains(&payload.to_string());
        let work = fit(&full, WORK_SIDE).into_owned();
        let e = finder_evidence(&work);
        let b = &boxes[file];
        let mut line = format!("{file} ours={ours} who={} ", b["who"]);
        if let Some(f) = e.finders {
            line += &format!(
                "gate=({:.0},{:.0} m{:.1}) light={} timing={} ",
                f[0].0, f[0].1, f[0].2, e.light, e.timing
            );
        } else {
            line += "gate=none ";
        }
        if b.is_null() {
            println!("{line} (no truth)");
            continue;
        }
        let pts = truth_corners(b);
        let s = (full.width() as f32) / (work.width() as f32);
        let xs: Vec<f32> = pts.iter().map(|p| p.0 / s).collect();
        let ys: Vec<f32> = pts.iter().map(|p| p.1 / s).collect();
        let (x0, x1) = (
            xs.iter().cloned().fold(f32::MAX, f32::min),
            xs.iter().cloned().fold(f32::MIN, f32::max),
        );
        let (y0, y1) = (
            ys.iter().cloned().fold(f32::MAX, f32::min),
            ys.iter().cloned().fold(f32::MIN, f32::max),
        );
        let side = (x1 - x0).max(y1 - y0);
        let pad = side * 0.3;
        let m = side / 33.0;
        line += &format!("truth=({x0:.0},{y0:.0}) side={side:.0} m~{m:.1} ");
        let c = crop(
            &work,
            (x0 - pad).max(0.0) as u32,
            (y0 - pad).max(0.0) as u32,
            (side + 2.0 * pad) as u32,
            (side + 2.0 * pad) as u32,
        );
        let c = if e.light && std::env::var("LAB_NOINV").is_err() {
            invert(&c)
        } else {
            c
        };
        if let Ok(p) = std::env::var("LAB_SAVE") {
            c.save(format!("{p}/{}.png", file)).unwrap();
        }
        let mut ok = Vec::new();
        for (name, prep) in PREPS {
            let img = prep(&c, m);
            let rx = scan_rxing(&img, true).contains(&payload.to_string());
            let rq = scan_rqrr(&img).contains(&payload.to_string());
            if rx {
                ok.push(name.to_string());
                *wins.entry(name.to_string()).or_default() += 1;
            }
            if rq {
                ok.push(format!("{name}/rq"));
                *wins.entry(format!("{name}/rq")).or_default() += 1;
            }
        }
        println!("{line}\n    reads: {}", ok.join(" "));
    }
    println!("{wins:?}");
}

#[test]
#[ignore]
fn centres_lab() {
    let (dir, boxes, only) = lab_env();
    for file in only.split(',') {
        let file = format!("{file}.jpg");
        let bytes = std::fs::read(format!("{dir}/{file}")).unwrap();
        let full = crate::decode_gray(&bytes, &crate::Limits::default()).unwrap();
        let work = fit(&full, WORK_SIDE).into_owned();
        let b = &boxes[&file];
        let pts = truth_corners(b);
        let inside = |x: f32, y: f32| {
            let xs = pts.iter().map(|p| p.0);
            let ys = pts.iter().map(|p| p.1);
            x >= xs.clone().fold(f32::MAX, f32::min) - 10.0
                && x <= xs.fold(f32::MIN, f32::max) + 10.0
                && y >= ys.clone().fold(f32::MAX, f32::min) - 10.0
                && y <= ys.fold(f32::MIN, f32::max) + 10.0
        };
        println!("{file} truth {pts:?}");
        for (label, img, k) in [
            ("half", box_downscale(&work, 2), 2.0f32),
            ("work", work.clone(), 1.0),
            ("blur-work", box_blur3(&work), 1.0),
            ("blur-half", box_blur3(&box_downscale(&work, 2)), 2.0),
            ("half-blur", box_downscale(&box_blur3(&work), 2), 2.0),
            ("blur2-work", box_blur3(&box_blur3(&work)), 1.0),
        ] {
            for bias in [10u32, 5] {
                let bin = mean_binarize(&img, bias, 0);
                let mut hits = Vec::new();
                finder_hits_in(&bin, 7, &mut |x, y, m, l| {
                    hits.push((k * x, k * y, k * m, l))
                });
                let (c, _, seen) = centres_of(&hits);
                let inq: Vec<String> = c
                    .iter()
                    .zip(&seen)
                    .filter(|(p, _)| inside(p.0, p.1))
                    .map(|(p, s)| format!("({:.0},{:.0} m{:.1} n{s})", p.0, p.1, p.2))
                    .collect();
                println!(
                    "  {label} bias{bias}: hits {} centres {} in-QR: {}",
                    hits.len(),
                    c.len(),
                    inq.join(" ")
                );
            }
        }
    }
}

#[test]
#[ignore]
fn evidence_lab() {
    let f = std::env::var("LAB_FILE").unwrap();
    let bytes = std::fs::read(&f).unwrap();
    let full = crate::decode_gray(&bytes, &crate::Limits::default()).unwrap();
    let work = fit(&full, WORK_SIDE).into_owned();
    let dark = OnceCell::new();
    let e = finder_evidence_with_half(&work, &box_downscale(&work, 2), &dark);
    println!("first: {e:?}");
    println!("fine: {:?}", fine_evidence(&work, &dark));
    println!(
        "soft: {:?}",
        fine_evidence(&box_blur3(&box_blur3(&work)), &dark)
    );
}

/// The gate's own QR regions (each look's triples, in their polarity), each preparation on them.
#[test]
#[ignore]
fn region_lab() {
    let dir = std::env::var("LAB_DIR").unwrap();
    let payloads: serde_json::Value =
        serde_json::from_slice(&std::fs::read(format!("{dir}/manifest.json")).unwrap()).unwrap();
    for m in payloads.as_array().unwrap() {
        let file = m["file"].as_str().unwrap();
        let only = std::env::var("LAB_ONLY").unwrap_or_default();
        if !only.is_empty() && !only.split(',').any(|o| file.contains(o)) {
            continue;
        }
        let payload = m["payload"].as_str().unwrap().to_string();
        let bytes = std::fs::read(format!("{dir}/{file}")).unwrap();
        let full = crate::decode_gray(&bytes, &crate::Limits::default()).unwrap();
        let work = fit(&full, WORK_SIDE).into_owned();
        let dark = OnceCell::new();
        let inv = invert(&work);
        let looks = [
            (
                "first",
                finder_evidence_with_half(&work, &box_downscale(&work, 2), &dark),
            ),
            ("fine", fine_evidence(&work, &dark)),
            ("soft", fine_evidence(&box_blur3(&box_blur3(&work)), &dark)),
        ];
        println!("{file}");
        for (label, e) in looks {
            let base = if e.light { &inv } else { &work };
            let triples = e.finders.iter().chain(e.others.iter().flatten());
            let pad: f32 = std::env::var("LAB_PAD").map_or(10.0, |v| v.parse().unwrap());
            for f in triples {
                let (c, module) = match qr_region_padded(base, f, pad) {
                    Some(x) => x,
                    None => continue,
                };
                let mut ok = Vec::new();
                for (name, prep) in PREPS {
                    let img = prep(&c, module);
                    if scan_rxing(&img, true).contains(&payload) {
                        ok.push(name.to_string());
                    }
                    if scan_rqrr(&img).contains(&payload) {
                        ok.push(format!("{name}/rq"));
                    }
                }
                let region = Region::new(&c, module, false);
                for (name, prep) in CROP_STRATEGIES {
                    if let Some(img) = prep(&region) {
                        let t = if name.ends_with("rqrr") {
                            scan_rqrr(&img)
                        } else {
                            scan_rxing(&img, true)
                        };
                        if t.contains(&payload) {
                            ok.push(format!("[{name}]"));
                        }
                    }
                }
                println!(
                    "  {label} light={} ({:.0},{:.0} m{:.1}) ({:.0},{:.0}) ({:.0},{:.0}) crop {}x{}: {}",
                    e.light, f[0].0, f[0].1, f[0].2, f[1].0, f[1].1, f[2].0, f[2].1,
                    c.width(), c.height(), ok.join(" ")
                );
            }
        }
    }
}
