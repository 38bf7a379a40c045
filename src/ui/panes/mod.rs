//! One module per pane; each is a small struct over the draw context that implements
//! `Widget for &Pane`.

pub mod fabric;
pub mod gpus;
pub mod log;
pub mod nccl;
pub mod nvlink;
pub mod phases;
pub mod storage;
pub mod triage;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use super::Ctx;
use crate::app::layout::PaneKind;

/// Draw `pane` into `area`.
pub fn draw_pane(pane: PaneKind, ctx: &Ctx, focused: bool, area: Rect, buf: &mut Buffer) {
    match pane {
        PaneKind::Gpus => (&gpus::GpuGrid { ctx, focused }).render(area, buf),
        PaneKind::Fabric => (&fabric::FabricPane { ctx, focused }).render(area, buf),
        PaneKind::Nvlink => (&nvlink::NvlinkPane { ctx, focused }).render(area, buf),
        PaneKind::Nccl => (&nccl::NcclPane { ctx, focused }).render(area, buf),
        PaneKind::Storage => (&storage::StoragePane { ctx, focused }).render(area, buf),
        PaneKind::Loader => (&storage::LoaderPane { ctx, focused }).render(area, buf),
        PaneKind::Phases => (&phases::PhasesPane { ctx, focused }).render(area, buf),
        PaneKind::Triage => (&triage::TriagePane { ctx, focused }).render(area, buf),
        PaneKind::Log => (&log::LogPane {
            ctx,
            focused,
            full: false,
        })
            .render(area, buf),
    }
}
