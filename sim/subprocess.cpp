#include "sim/engine.hpp"
