// The CUDA runtime including the CPU runtime: a sibling, reported.
#include "dsa/Runtime/CPU/Planted.h"
#include "dsa/Core/Missing.h"
