// What a kernel keeps of the burst rates under a load (see load.hpp).
#include "ptsim/cost/load.hpp"

namespace ptsim::cost {

RateScale rate_scale(const hardware::HardwareProfile& hw, Dtype dtype, Load load) {
  if (load == Load::Burst || !hw.gpu.sustained) return {};
  return {hw.gpu.sustained->tensor_for(dtype), hw.gpu.sustained->memory};
}

}  // namespace ptsim::cost
