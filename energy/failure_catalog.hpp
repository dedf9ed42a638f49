// Default failure processes, derived from the one public breakdown of interruptions of a
// large training job: the Llama 3 paper (Dubey et al., arXiv 2407.21783), Table 5, 54 days of
// Llama 3 405B pre-training on 16,384 H100 (2,048 servers of 8): 466 interruptions, 47
// planned and 419 unexpected, ~78% of the unexpected ones confirmed or suspected hardware.
#pragma once

#include <vector>

#include "energy/reliability.hpp"

namespace clustersim::energy {

/// The run Table 5 observed: GPUs, servers, hours.
inline constexpr double kLlama3Gpus = 16384.0;
inline constexpr double kLlama3Servers = 2048.0;
inline constexpr double kLlama3Hours = 54.0 * 24.0;
/// Interruptions Table 5 counts over that run (planned + unexpected).
inline constexpr int kLlama3Interruptions = 466;

/// Failure modes with MTBF = units x 1296 h / interruptions of Table 5's rows, grouped:
///  gpu (faulty GPU 148, GPU SRAM 19, GPU system processor 17, thermal interface/sensor 6,
///  silent data corruption 6) per GPU; hbm (HBM3 72) per GPU; nic (7) per GPU (one NIC each);
///  network (switch and cable 35) per GPU link; software (software bug 54, NCCL watchdog 7,
///  dependency 2) per GPU; host (host maintenance 32, SSD 3, power supply 3, chassis 2, IO
///  expansion board 2, CPU 2, system memory 2) per server; planned (47) per job.
/// Hardware modes need a replacement node; software and planned ones only a restart.
std::vector<FailureMode> llama3_failure_modes();

/// Failure of a whole NVLink domain (an NVL72 rack's copper backplane or NVLink switch tray):
/// one unit per domain, recovered by a spare domain or by repair. No public MTBF exists;
/// `mtbf_h` comes from the job.
FailureMode nvlink_domain_failure_mode(double mtbf_h);

}  // namespace clustersim::energy
