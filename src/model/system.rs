//! What the node runs, for the run's bill of materials: the type a node's hello carries
//! (`agent::system` reads it on the node).

use serde::{Deserialize, Serialize};

/// The software a node reports about itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemInfo {
    /// `uname -r`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// `PRETTY_NAME` from /etc/os-release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// `nv-fabricmanager --version`, where it is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric_manager: Option<String>,
    /// Every NCCL found: the system library's and the pip wheel's (what PyTorch loads), each
    /// with where it was found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nccl: Vec<String>,
}
