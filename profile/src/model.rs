//! The profile model: neuron-profile's JSON schema, as far as it applies to one execution
//! (docs/profile.md §2).
//!
//! Every type here mirrors one array of the JSON object neuron-profile 2.28 exports, with the
//! device files' key names and value types; [`crate::json`] writes and reads them. A field that
//! the device files carry on only some records is an `Option` and is left out when `None`, so a
//! written record has exactly the keys a device record of the same kind has. Keys the model
//! does not hold are skipped when a file is read (serde's default), never an error.
//!
//! Times: `timestamp`, `duration`, `start_ts`, `end_ts` are integer nanoseconds from the start
//! of the profiled window, floored; `summary[0]`'s times are seconds as `f64` (with picosecond
//! precision when the profile came from a trace or the builder).

use nrt_hal::EngineKind;
use serde::{Deserialize, Serialize};

/// One profile: the arrays of neuron-profile's JSON object that describe an execution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Profile {
    /// Every executed instruction kept in the window, ordered by subgraph then start time.
    pub instruction: Vec<Instruction>,
    /// Every DMA packet kept in the window.
    pub dma: Vec<DmaPacket>,
    /// Per subgraph and engine, the merged busy intervals (EVENT_SEMAPHORE excluded).
    pub active_time: Vec<ActiveTime>,
    /// Semaphore updates kept in the window.
    pub semaphore_update: Vec<SemaphoreUpdate>,
    /// One element: the summary of the run.
    pub summary: Vec<Summary>,
    /// One element per subgraph.
    pub model_info: Vec<ModelInfo>,
    /// One element: the NEFF header.
    pub neff_header: Vec<NeffHeader>,
    /// One element: what produced the profile.
    pub metadata: Vec<Metadata>,
}

impl Profile {
    /// The keys of neuron-profile's JSON object this model holds, in the order of its fields.
    pub const SECTIONS: [&'static str; 8] = [
        "instruction",
        "dma",
        "active_time",
        "semaphore_update",
        "summary",
        "model_info",
        "neff_header",
        "metadata",
    ];

    /// `summary[0]`, if present.
    pub fn summary(&self) -> Option<&Summary> {
        self.summary.first()
    }

    /// `metadata[0]`, if present.
    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.first()
    }

    /// `neff_header[0]`, if present.
    pub fn neff_header(&self) -> Option<&NeffHeader> {
        self.neff_header.first()
    }
}

/// The engine names neuron-profile uses: `subgroup` of an instruction, the prefix of the
/// summary's per-engine keys, the `engine` of `active_time[]`.
pub mod engine_names {
    use nrt_hal::EngineKind;

    /// `instruction[].subgroup` (and `label`, except MATMUL's `TensorMatrix`).
    pub const fn subgroup(e: EngineKind) -> &'static str {
        match e {
            EngineKind::Pe => "Tensor",
            EngineKind::Act => "Scalar",
            EngineKind::Pool => "GpSimd",
            EngineKind::Dve => "Vector",
            EngineKind::Sp => "Sync",
        }
    }

    /// The prefix of `summary[0]`'s per-engine keys and `active_time[].engine`.
    pub const fn summary_prefix(e: EngineKind) -> &'static str {
        match e {
            EngineKind::Pe => "tensor",
            EngineKind::Act => "scalar",
            EngineKind::Pool => "gpsimd",
            EngineKind::Dve => "vector",
            EngineKind::Sp => "sync",
        }
    }

    /// The engine a `subgroup` (or `label`) names; `TensorMatrix` is the PE.
    pub fn from_subgroup(s: &str) -> Option<EngineKind> {
        Some(match s {
            "Tensor" | "TensorMatrix" => EngineKind::Pe,
            "Scalar" => EngineKind::Act,
            "GpSimd" => EngineKind::Pool,
            "Vector" => EngineKind::Dve,
            "Sync" => EngineKind::Sp,
            _ => return None,
        })
    }

    /// The engine an `active_time[].engine` names.
    pub fn from_summary_prefix(s: &str) -> Option<EngineKind> {
        EngineKind::ALL
            .into_iter()
            .find(|&e| summary_prefix(e) == s)
    }
}

/// The opcode name of an EVENT_SEMAPHORE wait, the one instruction neuron-profile leaves out
/// of engine busy times.
pub const EVENT_SEMAPHORE: &str = "EVENT_SEMAPHORE";

/// One entry of `instruction[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Instruction {
    /// Activation function name (ACTIVATE), else empty.
    pub activation_fn: String,
    /// Compiler (BIR) id, `sgNNNN:n`, or empty.
    pub bir_id: String,
    /// Compiler instruction name, or empty.
    pub bir_instruction_name: String,
    /// Opcode the compiler emitted, where the runtime translated it (`PSEUDO_DMA_DIRECT2D`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiler_opcode: Option<String>,
    /// Operands of the compiler's instruction, where translated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiler_operands: Option<String>,
    /// The compiler's record index, where translated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiler_pc: Option<u64>,
    /// Input checksum (65535 when not computed).
    pub crc_in: u64,
    /// Output checksum (65535 when not computed).
    pub crc_out: u64,
    /// Duration, ns (floored).
    pub duration: u64,
    /// Elements a MATMUL moved through the array.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elements: Option<u64>,
    /// Time the instruction waited on its semaphore condition, ns.
    pub evt_wait_time: u64,
    /// `/sg00`, `/sg01`.
    pub fully_qualified_subgraph: String,
    /// HBM bytes read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hbm_read_bytes: Option<u64>,
    /// HBM bytes written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hbm_write_bytes: Option<u64>,
    /// HLO attributes, or empty.
    pub hlo_attrs: String,
    /// HLO name, or empty.
    pub hlo_name: String,
    /// Record id (a hash on the device; a sequence number in a simulated profile).
    pub id: u64,
    /// `REGULAR`, `TRANSPOSE`, or empty for the runtime's instructions.
    pub instruction_type: String,
    /// Whether the instruction reads PSUM and writes SBUF.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_psum_read_sbuf_write: Option<bool>,
    /// Engine label: the subgroup, except `TensorMatrix` for the PE's MATMUL.
    pub label: String,
    /// Layer name, or empty.
    pub layer: String,
    /// Opcode name as the profiler prints it (`MATMUL`, `EVENT_SEMAPHORE`, …).
    pub opcode: String,
    /// Operands as the profiler renders them.
    pub operands: String,
    /// Index of the instruction in the engine's stream as the device ran it.
    pub pc: u64,
    /// Compiler (penguin) id, or empty.
    pub penguin_id: String,
    /// Dependencies on other instructions (by `id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predecessors: Option<Vec<Predecessor>>,
    /// PSUM bytes read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psum_read_bytes: Option<u64>,
    /// PSUM-read / SBUF-write bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psum_read_sbuf_write_bytes: Option<u64>,
    /// PSUM bytes written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psum_write_bytes: Option<u64>,
    /// Numeric form of `bir_id` (0 if none).
    pub raw_bir_id: u64,
    /// Numeric form of `penguin_id` (0 if none).
    pub raw_penguin_id: u64,
    /// SBUF bytes read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sbuf_read_bytes: Option<u64>,
    /// SBUF bytes written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sbuf_write_bytes: Option<u64>,
    /// `sg00`, `sg01`.
    pub subgraph: String,
    /// Engine: `Tensor`, `Scalar`, `GpSimd`, `Vector`, `Sync`.
    pub subgroup: String,
    /// Start, ns from the window start (floored).
    pub timestamp: u64,
}

impl Instruction {
    /// The engine `subgroup` names, if it is one of the five.
    pub fn engine(&self) -> Option<EngineKind> {
        engine_names::from_subgroup(&self.subgroup)
    }

    /// Whether this is an EVENT_SEMAPHORE wait (left out of busy times).
    pub fn is_wait(&self) -> bool {
        self.opcode == EVENT_SEMAPHORE
    }
}

/// One element of `instruction[].predecessors`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Predecessor {
    /// The `id` of the instruction depended on.
    pub id: u64,
    /// Dependence kind (`FLOW_DEPENDENCE`, …).
    #[serde(rename = "type")]
    pub kind: String,
}

/// `dma[].queue_type`: which kind of queue carried a packet (docs/profile.md §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueType {
    /// A NEFF's static DMA ring (IO, spill): `static`.
    Static,
    /// The runtime's own queue set (instruction fetch, tables): `instruction`.
    Instruction,
    /// Descriptors generated by software (Pool) at run time: `software_dynamic`.
    SoftwareDynamic,
    /// Descriptors generated by the DGE hardware: `hardware_dynamic`.
    HardwareDynamic,
}

impl QueueType {
    /// The JSON spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            QueueType::Static => "static",
            QueueType::Instruction => "instruction",
            QueueType::SoftwareDynamic => "software_dynamic",
            QueueType::HardwareDynamic => "hardware_dynamic",
        }
    }

    /// The queue type a JSON spelling names.
    pub fn parse(s: &str) -> Option<QueueType> {
        Some(match s {
            "static" => QueueType::Static,
            "instruction" => QueueType::Instruction,
            "software_dynamic" => QueueType::SoftwareDynamic,
            "hardware_dynamic" => QueueType::HardwareDynamic,
            _ => return None,
        })
    }

    /// Whether the summary counts these packets as `static_dma_*` (static and instruction
    /// queues) rather than as one of the dynamic kinds.
    pub const fn is_static(self) -> bool {
        matches!(self, QueueType::Static | QueueType::Instruction)
    }
}

/// One entry of `dma[]`: a DMA packet (one descriptor's transfer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DmaPacket {
    /// `no` (packets are not aggregated).
    pub aggregated: String,
    /// 16-bit tag of the packet.
    pub crc: u64,
    /// Destination names (`["unknown"]`).
    pub dest: Vec<String>,
    /// Hardware DMA engine (queue) number, as a string: 64 + queue.
    pub dma_engine: String,
    /// Queue-set index, as a string.
    pub dma_queue: String,
    /// `no`.
    pub duplicate: String,
    /// Duration (start → data written), ns (floored).
    pub duration: u64,
    /// Record id (a hash on the device; a sequence number in a simulated profile).
    pub id: u64,
    /// `no` (not a collective-communication DMA).
    pub is_cc_dma: String,
    /// Operation, empty.
    pub op: String,
    /// Id shared by the packets of one aggregation.
    pub packet_aggregation_id: u64,
    /// Index of the packet among the kept packets of its queue.
    pub packet_idx: u64,
    /// `static`, `instruction`, `software_dynamic`, `hardware_dynamic`.
    pub queue_type: String,
    /// Bytes read.
    pub read_size: u64,
    /// Semaphore the packet increments, as a string (`-1`: none known).
    pub semaphore_id: String,
    /// Source names (`[["unknown"]]`).
    pub source: Vec<Vec<String>>,
    /// `sg00`, `sg01`.
    pub subgraph: String,
    /// `Q<queue set>-E<engine>`.
    pub subgroup: String,
    /// Start, ns from the window start (floored).
    pub timestamp: u64,
    /// Bytes per second over the packet's exact duration (a 32-bit float in the device files).
    pub transfer_rate: f32,
    /// Bytes transferred.
    pub transfer_size: u64,
    /// Variable name, `unknown`.
    pub variable: String,
    /// Bytes written.
    pub write_size: u64,
}

impl DmaPacket {
    /// The queue type `queue_type` names.
    pub fn queue_kind(&self) -> Option<QueueType> {
        QueueType::parse(&self.queue_type)
    }
}

/// One entry of `active_time[]`: a merged busy interval of one engine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ActiveTime {
    /// Length, ns (floored from the exact interval).
    pub duration_ns: u64,
    /// End, ns from the window start (floored).
    pub end_ts: u64,
    /// `tensor`, `scalar`, `gpsimd`, `vector`, `sync`.
    pub engine: String,
    /// Physical core within the logical core (0 for `sg00`, 1 for `sg01`).
    pub pcore_idx: u64,
    /// Start, ns from the window start (floored).
    pub start_ts: u64,
    /// `sg00`, `sg01`.
    pub subgraph: String,
}

/// One entry of `semaphore_update[]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SemaphoreUpdate {
    /// The semaphore: its number, or `S[n] (queue name)` for a DMA queue's semaphore.
    pub id: String,
    /// `sg00`, `sg01`.
    pub subgraph: String,
    /// Time, ns from the window start (floored).
    pub timestamp: u64,
    /// The value after the update.
    pub value: i64,
}

/// One entry of `model_info[]`: per-subgraph counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelInfo {
    /// DMA queues of the subgraph.
    pub dma_queue_count: u64,
    /// Events kept in the window.
    pub event_count: u64,
    /// GpSimd (Pool) instructions kept.
    pub gpsimd_engine_instruction_count: u64,
    /// NeuronCore index.
    pub nc_idx: u64,
    /// Device index.
    pub nd_idx: u64,
    /// Cycles of the subgraph.
    pub neuroncore_cycle_count: u64,
    /// Scalar (ACT) instructions kept.
    pub scalar_engine_instruction_count: u64,
    /// `sg00`, `sg01`.
    pub sg_name: String,
    /// Sync (SP) instructions kept.
    pub sync_engine_instruction_count: u64,
    /// Tensor (PE) instructions kept.
    pub tensor_engine_instruction_count: u64,
    /// Instructions + packets + events kept.
    pub trace_count: u64,
    /// Vector (DVE) instructions kept.
    pub vector_engine_instruction_count: u64,
}

/// `neff_header[0]`: the NEFF's header fields, every value a string as in the device files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NeffHeader {
    /// Build version.
    pub build_version: String,
    /// Payload size in bytes.
    pub data_size: String,
    /// Feature names, comma separated.
    pub enabled_features: String,
    /// Payload hash, hex.
    pub hash: String,
    /// Header size (`1024`).
    pub header_size: String,
    /// Format major version.
    pub major_version: String,
    /// Format minor version.
    pub minor_version: String,
    /// Network name (file name the compiler gave).
    pub network_name: String,
    /// Logical cores.
    pub number_of_logical_neuroncores: String,
    /// Physical cores per logical core.
    pub number_of_neuroncores_per_lnc: String,
    /// Package version.
    pub package_version: String,
    /// UUID, hex.
    pub uuid: String,
}

/// `metadata[0]`: what produced the profile and its time base.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Metadata {
    /// Schema version of the export (8).
    pub data_version: u64,
    /// DMA bandwidth used for utilisation figures, bytes/s.
    pub dma_ddr_bandwidth: u64,
    /// First timestamp, ns (0: times are relative to the window).
    pub first_hw_timestamp: u64,
    /// First timestamp as RFC 3339 text.
    pub first_ts: String,
    /// HBM bandwidth used for utilisation figures, bytes/s.
    pub hbm_ddr_bandwidth: u64,
    /// Whether the export carries the extended keys.
    pub is_ext: bool,
    /// **True when the profile comes from a simulator**, false for a device run.
    pub is_simulation: bool,
    /// Last timestamp, ns (the window length, floored).
    pub last_hw_timestamp: u64,
    /// Last timestamp as RFC 3339 text.
    pub last_ts: String,
    /// NTFF format version of the trace the profile was decoded from (0: none).
    pub ntff_version: u64,
    /// Physical cores of the run.
    pub num_physical_cores: u64,
    /// Subgraphs of the run.
    pub num_subgraphs: u64,
    /// PE clock, GHz.
    pub pe_clock_freq: f64,
    /// Clock of the other engines, GHz.
    pub pe_clock_others: f64,
    /// PE array columns.
    pub pe_num_cols: u64,
    /// PE array rows.
    pub pe_num_rows: u64,
    /// Trace time units per nanosecond (1000: picoseconds).
    pub ticks_per_nanosec: u64,
    /// Points (records) shown on the timeline.
    pub total_point_count: u64,
    /// Whether the run used logical (virtual) cores.
    pub vnc_enabled: bool,
}

/// HBM bandwidth the utilisation keys use, bytes/s (`metadata.hbm_ddr_bandwidth`).
pub const HBM_BANDWIDTH: f64 = 716e9;

impl Default for Metadata {
    fn default() -> Self {
        Metadata {
            data_version: 8,
            dma_ddr_bandwidth: 435_000_000_000,
            first_hw_timestamp: 0,
            first_ts: "1970-01-01T00:00:00Z".into(),
            hbm_ddr_bandwidth: HBM_BANDWIDTH as u64,
            is_ext: true,
            is_simulation: false,
            last_hw_timestamp: 0,
            last_ts: "1970-01-01T00:00:00Z".into(),
            ntff_version: 0,
            num_physical_cores: 1,
            num_subgraphs: 1,
            pe_clock_freq: 2.4,
            pe_clock_others: 1.2,
            pe_num_cols: 128,
            pe_num_rows: 128,
            ticks_per_nanosec: 1000,
            total_point_count: 0,
            vnc_enabled: false,
        }
    }
}

/// `summary[0]`: the run's figures, with neuron-profile's key names and units — times in
/// seconds, fractions (not percentages, despite the `_percent` names), counts and bytes as
/// integers. Which keys are derived and by which rule: docs/profile.md §4.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// ACTIVATE instructions.
    pub activate_instruction_count: u64,
    /// Sum of ACTIVATE durations (s).
    pub activate_instruction_time: f64,
    /// Collective-communication figure; 0 without collectives.
    pub cc_cores_instruction_active_time: f64,
    /// Collective-communication figure; 0 without collectives.
    pub cc_cores_instruction_active_time_percent: f64,
    /// Collective-communication figure; 0 without collectives.
    pub cc_cores_instruction_count: u64,
    /// Collective-communication figure; 0 without collectives.
    pub cc_cores_instruction_time: f64,
    /// Collective-communication figure; 0 without collectives.
    pub cc_op_active_time: f64,
    /// Collective-communication figure; 0 without collectives.
    pub cc_op_active_time_percent: f64,
    /// Collective-communication figure; 0 without collectives.
    pub cc_op_count: u64,
    /// Collective-communication figure; 0 without collectives.
    pub cc_op_time: f64,
    /// Collectives library version string.
    pub collectives_version: String,
    /// Compiler version of the NEFF.
    pub compiler_version: String,
    /// floor(dma_active_time in ns × 1.2).
    pub dma_active_cycles: u64,
    /// Union of all kept DMA packet intervals (s).
    pub dma_active_time: f64,
    /// dma_active_time / total_time (fraction).
    pub dma_active_time_percent: f64,
    /// Sum of all kept DMA packet durations (s).
    pub dma_packet_time: f64,
    /// DMA queues of the run (not derived from the trace).
    pub dma_queue_count: u64,
    /// Bytes per DMA transfer; 0 in neuron-profile 2.28 JSON.
    pub dma_transfer_average_bytes: f64,
    /// Duration of DMA transfers; 0 in neuron-profile 2.28 JSON (s).
    pub dma_transfer_time: f64,
    /// Kernel driver version string.
    pub driver_version: String,
    /// software_dynamic_dma_active_time_percent + hardware_dynamic_dma_active_time_percent.
    pub dynamic_dma_active_time_percent: f64,
    /// DGE (software + hardware) packets / all DMA packets (fraction).
    pub dynamic_dma_packet_percent: f64,
    /// DGE (software + hardware) bytes / all DMA bytes (fraction).
    pub dynamic_dma_size_percent: f64,
    /// Event (semaphore and notification) records kept in the window.
    pub event_count: u64,
    /// GpSimd (Pool) engine: union of instruction busy intervals, EVENT_SEMAPHORE excluded (s).
    pub gpsimd_engine_active_time: f64,
    /// GpSimd (Pool) engine: active time / total_time (fraction).
    pub gpsimd_engine_active_time_percent: f64,
    /// GpSimd (Pool) engine: instructions kept in the window, both subgraphs.
    pub gpsimd_engine_instruction_count: u64,
    /// GpSimd (Pool) engine: sum of instruction durations, EVENT_SEMAPHORE excluded (s).
    pub gpsimd_engine_instruction_time: f64,
    /// Union of the DMA packet intervals on hardware-DGE queues (s).
    pub hardware_dynamic_dma_active_time: f64,
    /// DMA active time on hardware-DGE queues / dma_active_time (fraction).
    pub hardware_dynamic_dma_active_time_percent: f64,
    /// DMA packets on hardware-DGE queues.
    pub hardware_dynamic_dma_packet_count: u64,
    /// DMA packets on hardware-DGE queues / all DMA packets (fraction).
    pub hardware_dynamic_dma_packet_percent: f64,
    /// Write-side bytes of the DMA packets on hardware-DGE queues.
    pub hardware_dynamic_dma_size: u64,
    /// Bytes on hardware-DGE queues / all DMA bytes (fraction).
    pub hardware_dynamic_dma_size_percent: f64,
    /// 2 × the elements of every MATMUL.
    pub hardware_flops: u64,
    /// Sum of the instructions' `hbm_read_bytes` (plus the builder's DMA HBM bytes).
    pub hbm_read_bytes: u64,
    /// Sum of the instructions' `hbm_write_bytes` (plus the builder's DMA HBM bytes).
    pub hbm_write_bytes: u64,
    /// hardware_flops / (peak flops × total_time) (fraction).
    pub hfu_estimated_percent: f64,
    /// Bytes through input queues (not derived).
    pub input_queue_bytes: u64,
    /// Bytes of the NEFF's inputs and weights.
    pub inputs_and_weights_size_bytes: u64,
    /// Bytes of the NEFF's inputs, outputs and weights.
    pub inputs_outputs_weights_size_bytes: u64,
    /// Instance type (`trn2.3xlarge`, …).
    pub instance_type: String,
    /// MATMUL instructions.
    pub matmul_instruction_count: u64,
    /// (hbm_read_bytes + hbm_write_bytes) / (HBM bandwidth × total_time) (fraction).
    pub mbu_estimated_percent: f64,
    /// inputs_and_weights_size_bytes / (HBM bandwidth × total_time) (fraction).
    pub mbu_min_read_util_percent: f64,
    /// (hardware_flops − transpose_flops) / (peak flops × total_time) (fraction).
    pub mfu_estimated_percent: f64,
    /// Model-flops utilisation from HLO statistics; 0 without them.
    pub mfu_hlo_estimated_percent: f64,
    /// Best achievable model-flops utilisation from HLO statistics; 0 without them.
    pub mfu_hlo_max_achievable_estimated_percent: f64,
    /// Equal to mfu_estimated_percent.
    pub mfu_inst_estimated_percent: f64,
    /// Equal to mfu_max_achievable_estimated_percent.
    pub mfu_inst_max_achievable_estimated_percent: f64,
    /// min(1, mm_arithmetic_intensity / (2 × peak_flops_bandwidth_ratio)) (fraction).
    pub mfu_max_achievable_estimated_percent: f64,
    /// (hardware_flops − transpose_flops) / (hbm_read_bytes + hbm_write_bytes).
    pub mm_arithmetic_intensity: f64,
    /// Model flops from HLO statistics; 0 without them.
    pub model_flops: u64,
    /// NeuronCore index of the run.
    pub nc_idx: u64,
    /// Neuron device index of the run.
    pub nd_idx: u64,
    /// floor(total_time in ns × 1.2).
    pub neuroncore_cycle_count: u64,
    /// Bytes through output queues (not derived).
    pub output_queue_bytes: u64,
    /// PE peak (128 × 128 × 2.4 GHz × 2 flops) / HBM bandwidth.
    pub peak_flops_bandwidth_ratio: f64,
    /// Version of the program that wrote the profile.
    pub profiler_version: String,
    /// Sum of the instructions' `psum_read_bytes`.
    pub psum_read_bytes: u64,
    /// Sum of the instructions' `psum_read_sbuf_write_bytes`.
    pub psum_read_sbuf_write_bytes: u64,
    /// Instructions with `is_psum_read_sbuf_write`.
    pub psum_read_sbuf_write_count: u64,
    /// Sum of the instructions' `psum_write_bytes`.
    pub psum_write_bytes: u64,
    /// Runtime version string.
    pub runtime_version: String,
    /// Sum of the instructions' `sbuf_read_bytes`.
    pub sbuf_read_bytes: u64,
    /// Sum of the instructions' `sbuf_write_bytes`.
    pub sbuf_write_bytes: u64,
    /// Scalar (ACT) engine: union of instruction busy intervals, EVENT_SEMAPHORE excluded (s).
    pub scalar_engine_active_time: f64,
    /// Scalar (ACT) engine: active time / total_time (fraction).
    pub scalar_engine_active_time_percent: f64,
    /// Scalar (ACT) engine: instructions kept in the window, both subgraphs.
    pub scalar_engine_instruction_count: u64,
    /// Scalar (ACT) engine: sum of instruction durations, EVENT_SEMAPHORE excluded (s).
    pub scalar_engine_instruction_time: f64,
    /// Union of the DMA packet intervals on software-DGE queues (s).
    pub software_dynamic_dma_active_time: f64,
    /// DMA active time on software-DGE queues / dma_active_time (fraction).
    pub software_dynamic_dma_active_time_percent: f64,
    /// DMA packets on software-DGE queues.
    pub software_dynamic_dma_packet_count: u64,
    /// DMA packets on software-DGE queues / all DMA packets (fraction).
    pub software_dynamic_dma_packet_percent: f64,
    /// Write-side bytes of the DMA packets on software-DGE queues.
    pub software_dynamic_dma_size: u64,
    /// Bytes on software-DGE queues / all DMA bytes (fraction).
    pub software_dynamic_dma_size_percent: f64,
    /// Union of the DMA packet intervals on static (and runtime `instruction`) queues (s).
    pub static_dma_active_time: f64,
    /// DMA active time on static (and runtime `instruction`) queues / dma_active_time (fraction).
    pub static_dma_active_time_percent: f64,
    /// DMA packets on static (and runtime `instruction`) queues.
    pub static_dma_packet_count: u64,
    /// DMA packets on static (and runtime `instruction`) queues / all DMA packets (fraction).
    pub static_dma_packet_percent: f64,
    /// Write-side bytes of the DMA packets on static (and runtime `instruction`) queues.
    pub static_dma_size: u64,
    /// Bytes on static (and runtime `instruction`) queues / all DMA bytes (fraction).
    pub static_dma_size_percent: f64,
    /// Sync (SP) engine: union of instruction busy intervals, EVENT_SEMAPHORE excluded (s).
    pub sync_engine_active_time: f64,
    /// Sync (SP) engine: active time / total_time (fraction).
    pub sync_engine_active_time_percent: f64,
    /// Sync (SP) engine: instructions kept in the window, both subgraphs.
    pub sync_engine_instruction_count: u64,
    /// Sync (SP) engine: sum of instruction durations, EVENT_SEMAPHORE excluded (s).
    pub sync_engine_instruction_time: f64,
    /// Tensor (PE) engine: union of instruction busy intervals, EVENT_SEMAPHORE excluded (s).
    pub tensor_engine_active_time: f64,
    /// Tensor (PE) engine: active time / total_time (fraction).
    pub tensor_engine_active_time_percent: f64,
    /// Tensor (PE) engine: instructions kept in the window, both subgraphs.
    pub tensor_engine_instruction_count: u64,
    /// Tensor (PE) engine: sum of instruction durations, EVENT_SEMAPHORE excluded (s).
    pub tensor_engine_instruction_time: f64,
    /// Power-throttling figure of the device (`ham[]`); 0 for a simulation unless set.
    pub throttle_active_nc0_time_ns: u64,
    /// Power-throttling figure of the device (`ham[]`); 0 for a simulation unless set.
    pub throttle_activity_0_active_time_nc0_percent: f64,
    /// Power-throttling figure of the device (`ham[]`); 0 for a simulation unless set.
    pub throttle_activity_0_avg_util_limit_nc0_percent: f64,
    /// Power-throttling figure of the device (`ham[]`); 0 for a simulation unless set.
    pub throttle_activity_1_active_time_nc0_percent: f64,
    /// Power-throttling figure of the device (`ham[]`); 0 for a simulation unless set.
    pub throttle_activity_1_avg_util_limit_nc0_percent: f64,
    /// Power-throttling figure of the device (`ham[]`); 0 for a simulation unless set.
    pub throttle_avg_util_limit_nc0_percent: f64,
    /// Union of every non-EVENT_SEMAPHORE instruction interval and every kept DMA packet interval (s).
    pub total_active_time: f64,
    /// total_active_time / total_time (fraction).
    pub total_active_time_percent: f64,
    /// The profiled window (s).
    pub total_time: f64,
    /// Kept instructions + kept DMA packets + kept events.
    pub trace_count: u64,
    /// 2 × the elements of every MATMUL of instruction_type TRANSPOSE.
    pub transpose_flops: u64,
    /// Vector (DVE) engine: union of instruction busy intervals, EVENT_SEMAPHORE excluded (s).
    pub vector_engine_active_time: f64,
    /// Vector (DVE) engine: active time / total_time (fraction).
    pub vector_engine_active_time_percent: f64,
    /// Vector (DVE) engine: instructions kept in the window, both subgraphs.
    pub vector_engine_instruction_count: u64,
    /// Vector (DVE) engine: sum of instruction durations, EVENT_SEMAPHORE excluded (s).
    pub vector_engine_instruction_time: f64,
    /// Bytes through weight queues (not derived).
    pub weight_queue_bytes: u64,
    /// Bytes of the NEFF's weights.
    pub weight_size_bytes: u64,
}
