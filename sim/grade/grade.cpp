#include "sim/grade/grade.h"
