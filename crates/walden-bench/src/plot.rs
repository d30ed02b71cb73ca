//! PNG line charts of throughput against threads, one line per strategy or
//! system (like the seeds' charts), with the machine's limits as dashed
//! horizontal lines, the spread of the slices as vertical bars and the
//! machine in small print under the chart. Drawn with plotters' bitmap backend and an embedded
//! DejaVu font, so no system font library is needed.

use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (threads, value) points, in thread order.
    pub points: Vec<(usize, f64)>,
    /// (threads, slowest, fastest): the spread of the slices behind a
    /// point, drawn as a vertical bar (empty: not measured in slices).
    pub spread: Vec<(usize, f64, f64)>,
}

/// A chart of values against thread counts (log-2 x axis).
#[derive(Clone, Debug)]
pub struct ThreadChart {
    /// Title above the chart.
    pub title: String,
    /// Y axis label, with unit.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// Horizontal reference lines (a physical limit): legend text and value.
    pub limits: Vec<(String, f64)>,
}

/// A chart that could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Nothing to draw.
    #[error("chart {0:?} has no points")]
    Empty(String),
    /// The drawing or the PNG file failed.
    #[error("drawing {path}: {message}")]
    Draw {
        /// The PNG file.
        path: String,
        /// plotters' message.
        message: String,
    },
}

/// Width and height of every chart, pixels.
const SIZE: (u32, u32) = (960, 600);
/// The font family the charts use (registered from the embedded DejaVu Sans).
const FONT: &str = "sans-serif";

fn register_embedded_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The embedded font is a valid TrueType file; if registration ever
        // failed, drawing text reports the error.
        let _ = register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
}

impl ThreadChart {
    /// Draws the chart into a PNG file at `path`, with `note` (the
    /// machine that measured it) in small print under it.
    pub fn write_png(&self, path: &Path, note: &str) -> Result<(), PlotError> {
        let points = self.series.iter().flat_map(|s| s.points.iter());
        let (mut max_threads, mut max_value) = (1usize, 0f64);
        for &(threads, value) in points {
            max_threads = max_threads.max(threads);
            max_value = max_value.max(value);
        }
        for &(_, _, fastest) in self.series.iter().flat_map(|s| s.spread.iter()) {
            max_value = max_value.max(fastest);
        }
        if max_value <= 0.0 {
            return Err(PlotError::Empty(self.title.clone()));
        }
        for (_, limit) in &self.limits {
            max_value = max_value.max(*limit);
        }
        register_embedded_font();
        let draw_error = |e: &dyn std::fmt::Display| PlotError::Draw {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let root = BitMapBackend::new(path, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_error(&e))?;
        let spread = self.series.iter().any(|s| !s.spread.is_empty());
        let note = if spread {
            format!("{note}; bars: slowest to fastest slice")
        } else {
            note.to_owned()
        };
        root.draw(&Text::new(note, (16, SIZE.1 as i32 - 18), (FONT, 13)))
            .map_err(|e| draw_error(&e))?;
        let root = root.margin(0, 18, 0, 0);
        let x_max = (max_threads.next_power_of_two() as f64).max(2.0);
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, (FONT, 24))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(80)
            .build_cartesian_2d((1f64..x_max).log_scale().base(2.0), 0f64..max_value * 1.1)
            .map_err(|e| draw_error(&e))?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_desc("threads")
            .y_desc(&self.y_label)
            .x_label_formatter(&|x| format!("{}", x.round() as u64))
            .y_label_formatter(&|y| short_number(*y))
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 17))
            .draw()
            .map_err(|e| draw_error(&e))?;
        for (i, series) in self.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let line = series.points.iter().map(|&(t, v)| (t as f64, v));
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(3)))
                .map_err(|e| draw_error(&e))?
                .label(&series.name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], color.stroke_width(3))
                });
            chart
                .draw_series(line.map(|p| Circle::new(p, 4, color.filled())))
                .map_err(|e| draw_error(&e))?;
            // A bar from the slowest slice to the fastest, capped at both
            // ends (the x axis is logarithmic: caps of ±4 %).
            let bars = series.spread.iter().flat_map(|&(t, lo, hi)| {
                let (x, left, right) = (t as f64, t as f64 / 1.04, t as f64 * 1.04);
                [
                    PathElement::new([(x, lo), (x, hi)], color.stroke_width(2)),
                    PathElement::new([(left, lo), (right, lo)], color.stroke_width(2)),
                    PathElement::new([(left, hi), (right, hi)], color.stroke_width(2)),
                ]
            });
            chart.draw_series(bars).map_err(|e| draw_error(&e))?;
        }
        for (name, value) in &self.limits {
            let dashes = (0..64).map(|i| {
                let from = x_max.powf(i as f64 / 64.0);
                let to = x_max.powf((i as f64 + 0.5) / 64.0);
                PathElement::new([(from, *value), (to, *value)], BLACK.stroke_width(2))
            });
            chart
                .draw_series(dashes)
                .map_err(|e| draw_error(&e))?
                .label(name)
                .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 15))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| draw_error(&e))?;
        root.present().map_err(|e| draw_error(&e))
    }
}

/// `1.5 k`, `2.3 M`, `850` — axis labels.
pub fn short_number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e9 {
        format!("{:.1} G", value / 1e9)
    } else if magnitude >= 1e6 {
        format!("{:.1} M", value / 1e6)
    } else if magnitude >= 1e3 {
        format!("{:.1} k", value / 1e3)
    } else {
        format!("{value:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_is_a_png_of_the_chosen_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.png");
        let chart = ThreadChart {
            title: "commits".into(),
            y_label: "commits/s".into(),
            series: vec![
                Series {
                    name: "a".into(),
                    points: vec![(1, 10.0), (2, 18.0), (64, 40.0)],
                    spread: vec![(1, 9.0, 11.0), (64, 30.0, 60.0)],
                },
                Series {
                    name: "b".into(),
                    points: vec![(1, 5.0), (64, 9.0)],
                    spread: Vec::new(),
                },
            ],
            limits: vec![("disk".into(), 50.0)],
        };
        chart.write_png(&path, "2 cores").unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height, big-endian, at offsets 16 and 20.
        assert_eq!(
            u32::from_be_bytes(bytes[16..20].try_into().unwrap()),
            SIZE.0
        );
        assert_eq!(
            u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
            SIZE.1
        );
    }

    #[test]
    fn an_empty_chart_is_an_error() {
        let chart = ThreadChart {
            title: "nothing".into(),
            y_label: "x".into(),
            series: vec![],
            limits: vec![],
        };
        let err = chart
            .write_png(Path::new("/tmp/never.png"), "")
            .unwrap_err();
        assert!(err.to_string().contains("nothing"));
    }

    #[test]
    fn numbers_shorten_with_units() {
        assert_eq!(short_number(1_500.0), "1.5 k");
        assert_eq!(short_number(2_300_000.0), "2.3 M");
        assert_eq!(short_number(850.0), "850");
        assert_eq!(short_number(3.2e9), "3.2 G");
    }
}
