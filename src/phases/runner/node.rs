//! One node's part of a phase: its script launched or re-attached, its log streamed through
//! the parser line by line (capped), its exit status and what it said.

use super::*;

/// Longest line kept from a log; the rest of a longer line is dropped (and counted).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Run a short script to completion: (exit code, stdout, stderr), or the transport's reason.
pub(super) async fn run_script(
    t: &dyn Transport,
    cmd: &RemoteCommand,
) -> Result<(Option<i32>, String, String), String> {
    let child = t
        .command(cmd)
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    match tokio::time::timeout(SCRIPT_TIMEOUT, crate::transport::wait_bounded(child)).await {
        Err(_) => Err(format!("no answer in {} s", SCRIPT_TIMEOUT.as_secs())),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(out)) => {
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() {
                Ok((out.status.code(), stdout, stderr))
            } else {
                Err(t.classify(Some(out.status), &stderr))
            }
        }
    }
}

/// Read one line of at most [`MAX_LINE_BYTES`] (the rest of a longer line is consumed and
/// dropped). Returns bytes consumed (0 at end of stream) and whether a newline ended it.
async fn read_line_capped<R: AsyncBufRead + Unpin>(
    r: &mut R,
    out: &mut Vec<u8>,
) -> std::io::Result<(usize, bool)> {
    let mut consumed = 0;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok((consumed, false));
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(out.len());
        out.extend_from_slice(&buf[..take.min(room)]);
        r.consume(take);
        consumed += take;
        if done {
            return Ok((consumed, true));
        }
    }
}

/// Metrics one node's run of a phase keeps for the gates: a 72-hour training log steps about
/// 260 000 times; a node printing figures at line rate must not take the console's memory.
pub const NODE_METRICS_KEPT: usize = 100_000;

/// Keep `m`; at [`NODE_METRICS_KEPT`], the older half of the training steps goes (the gates
/// read steps by their recent median), else the new metric is not kept: the first figures of
/// a phase are the ones a flood cannot forge afterwards.
pub(super) fn keep_metric(kept: &mut Vec<PhaseMetric>, m: PhaseMetric) {
    if kept.len() >= NODE_METRICS_KEPT {
        let steps = kept
            .iter()
            .filter(|x| matches!(x, PhaseMetric::Step { .. }))
            .count();
        if steps < 2 {
            return;
        }
        let mut drop = steps / 2;
        kept.retain(|x| {
            if drop > 0 && matches!(x, PhaseMetric::Step { .. }) {
                drop -= 1;
                false
            } else {
                true
            }
        });
    }
    kept.push(m);
}

/// Whatever one node's run of a phase left behind.
#[derive(Debug, Default)]
pub(super) struct NodeResult {
    pub(super) exit: Option<i32>,
    pub(super) stopped: Option<StopReason>,
    pub(super) metrics: Vec<PhaseMetric>,
    pub(super) seen: BTreeSet<String>,
    pub(super) unparsed: u64,
    pub(super) first_unparsed: Option<String>,
    /// Why it could not run at all.
    pub(super) failed: Option<String>,
}

pub(super) struct NodeJob {
    pub(super) phase: Arc<PhaseSpec>,
    /// The phase id its events carry (a `together` phase's members speak as the group).
    pub(super) event_phase: String,
    /// The node as its lines and notes name it (`T7@node01` for a member of a group).
    pub(super) label: String,
    pub(super) node: RunnerNode,
    pub(super) dir: PhaseDir,
    pub(super) command: String,
    pub(super) hostfile: String,
    pub(super) grace_s: u64,
    pub(super) events: mpsc::Sender<PhaseEvent>,
    /// Set when the job must stop: the operator aborted, or a drill is done with its load.
    pub(super) stop: StopSwitch,
    /// Re-attaching to a phase launched by an earlier console: how many of its output lines
    /// the record already holds (they are parsed again, not sent again).
    pub(super) reattach: Option<usize>,
    /// Output lines seen so far.
    pub(super) lines_seen: usize,
    /// Which parser reads this job's output (a `pairs` server's is not read for figures).
    pub(super) parser: crate::parsers::ParserKind,
}

impl NodeJob {
    pub(super) async fn say(&self, text: String) {
        let _ = self
            .events
            .send(PhaseEvent::Note {
                phase: self.event_phase.clone(),
                at_ms: now_ms(),
                node: Some(self.label.clone()),
                text,
            })
            .await;
    }

    /// Launch the job on its node, or find the one an earlier console launched: when its time
    /// limit runs out, or why it cannot run.
    async fn start(&self, t: &dyn Transport) -> Result<Instant, String> {
        if self.reattach.is_some() {
            // It was launched before: it must still be there, and its time limit counts from
            // when it started on the node.
            match run_script(t, &remote::status(&self.dir)).await {
                Ok((_, out, _)) => match remote::parse_status(out.trim()) {
                    Some(remote::Status {
                        state: RemoteState::Missing,
                        ..
                    })
                    | None => Err(format!(
                        "nothing to re-attach to on {}: {}",
                        self.node.spec.name,
                        out.trim()
                    )),
                    Some(st) => {
                        let ran_s = st
                            .started_s
                            .map_or(0, |s0| (now_ms() / 1000).saturating_sub(s0));
                        let deadline = Instant::now()
                            + self
                                .phase
                                .timeout
                                .saturating_sub(Duration::from_secs(ran_s));
                        self.say(format!(
                            "re-attached after a console restart; it has run {ran_s} s"
                        ))
                        .await;
                        Ok(deadline)
                    }
                },
                Err(why) => Err(format!(
                    "cannot re-attach on {}: {why}",
                    self.node.spec.name
                )),
            }
        } else {
            let files = crate::workloads::referenced_by(&self.command);
            let launch = remote::launch(&self.dir, &self.command, &self.hostfile, &files);
            match run_script(t, &launch).await {
                Ok((_, out, _)) => {
                    self.say(out.trim().to_string()).await;
                    Ok(Instant::now() + self.phase.timeout)
                }
                Err(why) => {
                    self.say(format!("could not launch: {why}")).await;
                    Err(format!(
                        "could not launch on {}: {why}",
                        self.node.spec.name
                    ))
                }
            }
        }
    }

    pub(super) async fn run(mut self) -> NodeResult {
        let mut result = NodeResult::default();
        let t = Arc::clone(&self.node.transport);
        let deadline = match self.start(t.as_ref()).await {
            Ok(d) => d,
            Err(why) => {
                result.failed = Some(why);
                return result;
            }
        };
        let contains: Vec<String> = self
            .phase
            .gates
            .iter()
            .flat_map(Gate::output_texts)
            .collect();
        let mut parser = OutputParser::new(
            self.parser,
            ParseContext {
                node: self.node.spec.name.clone(),
                expected_gpus: self.node.spec.gpus,
            },
        );
        let mut offset: u64 = 0;
        let mut stop_task: Option<tokio::task::JoinHandle<()>> = None;
        let mut stop_live = true;
        let mut backoff = Duration::from_millis(500);
        let mut line = Vec::new();
        'attach: loop {
            let mut child = match t.command(&remote::attach(&self.dir, offset)).spawn() {
                Ok(c) => c,
                Err(e) => {
                    result.failed = Some(format!("cannot start the transport: {e}"));
                    break;
                }
            };
            let Some(stdout) = child.stdout.take() else {
                break;
            };
            let stderr = child.stderr.take();
            // Its last bytes only: the node may say anything on stderr for the whole phase.
            let stderr_task = tokio::spawn(async move {
                match stderr {
                    Some(e) => {
                        crate::transport::read_bounded(e, crate::transport::OUTPUT_KEPT_BYTES, true)
                            .await
                            .map(|b| String::from_utf8_lossy(&b).into_owned())
                            .unwrap_or_default()
                    }
                    None => String::new(),
                }
            });
            let mut reader = BufReader::new(stdout);
            loop {
                line.clear();
                tokio::select! {
                    read = read_line_capped(&mut reader, &mut line) => {
                        let Ok((n, complete)) = read else { break };
                        if n == 0 {
                            break;
                        }
                        if !complete {
                            // A last line without a newline: kept only if the phase has ended
                            // (decided below); a dropped link re-reads it.
                            let status = child.wait().await.ok();
                            if status.is_some_and(|s| s.success()) {
                                offset += n as u64;
                                self.line(&line, &mut parser, &mut result, &contains).await;
                            }
                            break;
                        }
                        offset += n as u64;
                        self.line(&line, &mut parser, &mut result, &contains).await;
                    }
                    _ = tokio::time::sleep_until(deadline), if stop_task.is_none() => {
                        self.say(format!("ran past its {} s limit: stopping the process group", self.phase.timeout.as_secs())).await;
                        stop_task = Some(self.spawn_stop(StopReason::Timeout));
                    }
                    changed = self.stop.changed(), if stop_task.is_none() && stop_live => {
                        match changed {
                            Ok(()) => {
                                let why = *self.stop.borrow();
                                if let Some(why) = why {
                                    self.say(stop_words(why).into()).await;
                                    stop_task = Some(self.spawn_stop(why));
                                }
                            }
                            // Nobody can stop it any more: stop asking.
                            Err(_) => stop_live = false,
                        }
                    }
                }
            }
            let status = child.wait().await.ok();
            let stderr = stderr_task.await.unwrap_or_default();
            match status.and_then(|s| s.code()) {
                Some(0) => break 'attach,
                Some(c @ 90..=94) => {
                    let why = stderr.lines().last().unwrap_or("").trim().to_string();
                    result.failed = Some(format!(
                        "attach failed ({c}): {}",
                        crate::model::excerpt(&why)
                    ));
                    break 'attach;
                }
                _ => {
                    let why = t.classify(status, &stderr);
                    self.say(format!(
                        "lost the log stream ({why}); re-attaching at byte {offset} in {:.1} s",
                        backoff.as_secs_f64()
                    ))
                    .await;
                    // The phase keeps running on the node; abort and timeout still count.
                    let wait = tokio::time::sleep(backoff);
                    tokio::pin!(wait);
                    loop {
                        tokio::select! {
                            _ = &mut wait => break,
                            _ = tokio::time::sleep_until(deadline), if stop_task.is_none() => {
                                stop_task = Some(self.spawn_stop(StopReason::Timeout));
                            }
                            changed = self.stop.changed(), if stop_task.is_none() && stop_live => {
                                match changed {
                                    Ok(()) => {
                                        let why = *self.stop.borrow();
                                        if let Some(why) = why {
                                            stop_task = Some(self.spawn_stop(why));
                                        }
                                    }
                                    Err(_) => stop_live = false,
                                }
                            }
                        }
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        }
        if let Some(task) = stop_task {
            let _ = task.await;
        }
        // What the parser can only say at the end (T0/T1's checks, a table's last figures)
        // goes out like the rest: the console's checklist and the record need it.
        let at_ms = now_ms();
        for m in parser.finish() {
            self.metric(at_ms, m, &mut result).await;
        }
        // What the node says now decides the exit status.
        for attempt in 0..5u32 {
            match run_script(t.as_ref(), &remote::status(&self.dir)).await {
                Ok((_, out, _)) => match remote::parse_status(out.trim()) {
                    Some(s) => {
                        result.stopped = s.stopped;
                        match s.state {
                            RemoteState::Exited(rc) => result.exit = Some(rc),
                            RemoteState::Ended => result.exit = None,
                            RemoteState::Running => {
                                result.failed.get_or_insert_with(|| {
                                    "the log ended but the phase still runs".into()
                                });
                            }
                            RemoteState::Missing => {
                                result.failed.get_or_insert_with(|| {
                                    "the phase directory is gone from the node".into()
                                });
                            }
                        }
                        break;
                    }
                    None => {
                        result.failed = Some(format!("status script said {:?}", out.trim()));
                        break;
                    }
                },
                Err(why) if attempt == 4 => {
                    result.failed = Some(format!("no status from the node: {why}"));
                }
                Err(_) => tokio::time::sleep(Duration::from_secs(1 << attempt)).await,
            }
        }
        result
    }

    /// A parsed figure: sent to the console and the record, and kept for the gates.
    pub(super) async fn metric(&self, at_ms: u64, m: PhaseMetric, result: &mut NodeResult) {
        let _ = self
            .events
            .send(PhaseEvent::Metric {
                phase: self.event_phase.clone(),
                at_ms,
                metric: m.clone(),
            })
            .await;
        keep_metric(&mut result.metrics, m);
    }

    fn spawn_stop(&self, why: StopReason) -> tokio::task::JoinHandle<()> {
        let t = Arc::clone(&self.node.transport);
        let cmd = remote::stop(&self.dir, self.grace_s, why);
        let events = self.events.clone();
        let phase = self.event_phase.clone();
        let node = self.label.clone();
        tokio::spawn(async move {
            // A stop must get through: retry while the link is down.
            for attempt in 0..10u32 {
                match run_script(t.as_ref(), &cmd).await {
                    Ok((_, out, _)) => {
                        let _ = events
                            .send(PhaseEvent::Note {
                                phase: phase.clone(),
                                at_ms: now_ms(),
                                node: Some(node.clone()),
                                text: format!("stop: {}", out.trim()),
                            })
                            .await;
                        return;
                    }
                    Err(_) => {
                        tokio::time::sleep(Duration::from_secs((1u64 << attempt).min(10))).await
                    }
                }
            }
        })
    }

    /// One whole line of the node's log: shown, searched for the gates' texts, parsed.
    pub(super) async fn line(
        &mut self,
        raw: &[u8],
        parser: &mut OutputParser,
        result: &mut NodeResult,
        contains: &[String],
    ) {
        let text = String::from_utf8_lossy(raw);
        let text = text.trim_end_matches(['\n', '\r']);
        for c in contains {
            if text.contains(c.as_str()) {
                result.seen.insert(c.clone());
            }
        }
        let at_ms = now_ms();
        self.lines_seen += 1;
        // On re-attach the record already has the first lines: parse them, do not send them.
        if self.reattach.is_none_or(|known| self.lines_seen > known) {
            let _ = self
                .events
                .send(PhaseEvent::Line {
                    phase: self.event_phase.clone(),
                    at_ms,
                    node: Some(self.label.clone()),
                    text: text.to_string(),
                })
                .await;
        }
        match parser.push(text) {
            Ok(metrics) => {
                for m in metrics {
                    self.metric(at_ms, m, result).await;
                }
            }
            Err(e) => {
                result.unparsed += 1;
                result
                    .first_unparsed
                    .get_or_insert_with(|| format!("{}: {e}", self.node.spec.name));
            }
        }
    }
}
