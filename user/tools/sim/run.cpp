// SPDX-License-Identifier: BSD-2-Clause
#include "sim.hpp"
