//! One step on many nodes at once.

use std::future::Future;

use futures_util::StreamExt as _;
use futures_util::stream;

/// Runs `step` for every item of `nodes`, at most `concurrency` at a time (0 counts as 1), and
/// returns the results in the order of `nodes` — not of completion — so that reports and logs
/// come out the same on every run.
pub async fn fan_out<'a, N, T, F, Fut>(nodes: &'a [N], concurrency: usize, step: F) -> Vec<T>
where
    F: Fn(&'a N) -> Fut,
    Fut: Future<Output = T>,
{
    let mut results: Vec<(usize, T)> = stream::iter(nodes.iter().enumerate())
        .map(|(index, node)| {
            let running = step(node);
            async move { (index, running.await) }
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    results.sort_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::fan_out;

    #[tokio::test]
    async fn keeps_the_order_of_the_nodes_and_the_bound() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let nodes: Vec<u64> = (0..12).collect();
        let results = fan_out(&nodes, 3, |n| {
            let n = *n;
            let (running, most) = (&running, &most);
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // Later nodes finish first, so completion order differs from node order.
                tokio::time::sleep(Duration::from_millis(12 - n)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                n * 10
            }
        })
        .await;
        assert_eq!(results, (0..12).map(|n| n * 10).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 3);
    }
}
