use super::node::keep_metric;
use super::*;

fn figure(i: u64) -> PhaseMetric {
    PhaseMetric::Figure {
        node: "n".into(),
        gpu: None,
        name: "tflops_bf16".into(),
        value: i as f64,
    }
}

fn step(i: u64) -> PhaseMetric {
    PhaseMetric::Step {
        node: None,
        step: i,
        step_time_ms: Some(100.0),
        data_wait_ms: None,
        tokens_per_sec: Some(1.0),
        tokens_per_sec_per_gpu: None,
        tflops_per_gpu: None,
        loss: None,
        world: None,
        variant: None,
    }
}

#[test]
fn a_node_flooding_figures_is_held_to_the_cap_and_its_first_figures_stay() {
    let mut kept = Vec::new();
    for i in 0..(NODE_METRICS_KEPT as u64 + 50_000) {
        keep_metric(&mut kept, figure(i));
    }
    assert_eq!(kept.len(), NODE_METRICS_KEPT);
    assert_eq!(kept[0], figure(0));
}

#[test]
fn a_long_training_log_keeps_its_newest_steps_within_the_cap() {
    let mut kept = vec![figure(0)];
    for i in 0..300_000u64 {
        keep_metric(&mut kept, step(i));
    }
    assert!(kept.len() <= NODE_METRICS_KEPT, "{}", kept.len());
    assert_eq!(kept[0], figure(0), "the non-step figure stays");
    assert_eq!(kept.last(), Some(&step(299_999)), "the newest step is kept");
}
