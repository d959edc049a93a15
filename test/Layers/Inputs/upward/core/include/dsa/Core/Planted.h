// A core header that includes a compiler header: the upward include check-layers.py must report.
#include "dsa/Dialect/Planted.h"
