// A compiler header (may include core: not reported).
#include "dsa/Core/Planted.h"
