//! A fixed-size latency histogram with log-linear buckets: mergeable across
//! threads and runs, percentiles within 1/32 relative error, a few
//! kilobytes whatever the number of samples.

/// Sub-buckets per power of two (2^5 = 32): the relative precision.
const SUB_BITS: u32 = 5;
/// Values below this have a bucket each.
const EXACT: u64 = 2 << SUB_BITS;
/// Buckets for every `u64`: 64 exact ones, then 32 per power of two up to 2^63.
const BUCKETS: usize = ((64 - SUB_BITS as usize) << SUB_BITS) + (1 << SUB_BITS);

/// Counts of nanosecond latencies.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    counts: Box<[u64]>,
    total: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            total: 0,
        }
    }
}

impl LatencyHistogram {
    /// Adds one sample.
    pub fn record(&mut self, ns: u64) {
        self.counts[bucket(ns)] += 1;
        self.total += 1;
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (count, more) in self.counts.iter_mut().zip(other.counts.iter()) {
            *count += more;
        }
        self.total += other.total;
    }

    /// Number of samples.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The `percent`th percentile (nearest rank), as the upper edge of its
    /// bucket; `None` without samples.
    pub fn percentile(&self, percent: u64) -> Option<u64> {
        let rank = (self.total * percent).div_ceil(100).max(1);
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Some(upper_edge(index));
            }
        }
        None
    }
}

/// The bucket of `value`: exact below [`EXACT`], then the top `SUB_BITS + 1`
/// significant bits.
fn bucket(value: u64) -> usize {
    if value < EXACT {
        return value as usize;
    }
    let shift = 63 - value.leading_zeros() - SUB_BITS;
    ((shift as usize) << SUB_BITS) + (value >> shift) as usize
}

/// The largest value of bucket `index`.
fn upper_edge(index: usize) -> u64 {
    if (index as u64) < EXACT {
        return index as u64;
    }
    let shift = (index >> SUB_BITS) as u32 - 1;
    let mantissa = (index - ((shift as usize) << SUB_BITS)) as u64;
    // The bucket's lower edge plus its width less one (no overflow at the top).
    (mantissa << shift) + ((1 << shift) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_lands_in_a_bucket_whose_upper_edge_is_within_1_32() {
        let values = (0..2000u64)
            .chain((0..64).map(|bit| 1u64 << bit))
            .chain((1..64).map(|bit| (1u64 << bit) - 1))
            .chain([u64::MAX, 123_456_789, 987_654_321_012]);
        for value in values {
            let index = bucket(value);
            assert!(index < BUCKETS, "{value} -> {index}");
            let upper = upper_edge(index);
            assert!(upper >= value, "{value}: upper edge {upper}");
            assert!(upper - value <= value / 32, "{value}: upper edge {upper}");
        }
    }

    #[test]
    fn buckets_are_ordered_like_values() {
        let mut previous = 0;
        for value in (0..100_000u64).step_by(7) {
            let index = bucket(value);
            assert!(index >= previous, "{value}");
            previous = index;
        }
    }

    #[test]
    fn percentiles_match_exact_ranks_within_precision() {
        let mut histogram = LatencyHistogram::default();
        let samples: Vec<u64> = (1..=10_000).map(|i| i * 37).collect();
        samples.iter().for_each(|&ns| histogram.record(ns));
        for percent in [1, 50, 99, 100] {
            let exact = samples[(samples.len() * percent as usize).div_ceil(100) - 1];
            let estimate = histogram.percentile(percent).unwrap();
            assert!(
                estimate >= exact && estimate - exact <= exact / 32,
                "p{percent}: {estimate} vs {exact}"
            );
        }
        assert_eq!(LatencyHistogram::default().percentile(50), None);
    }

    #[test]
    fn merge_adds_samples() {
        let (mut low, mut high) = (LatencyHistogram::default(), LatencyHistogram::default());
        (0..90).for_each(|_| low.record(10));
        (0..10).for_each(|_| high.record(5_000));
        low.merge(&high);
        assert_eq!(low.total(), 100);
        assert_eq!(low.percentile(90), Some(10));
        assert_eq!(low.percentile(91), Some(upper_edge(bucket(5_000))));
    }
}
