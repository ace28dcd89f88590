#ifndef CCRC32C_H
#define CCRC32C_H
#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU has CRC32C instructions (x86-64 SSE4.2, ARMv8 CRC extension), else 0.
int hub_crc32c_hardware_available(void);

/// Continues a CRC-32C over `data` using the CPU's instructions. `crc` is the running value
/// *before* final inversion (start with 0xFFFFFFFF, invert at the end). Only call when available.
uint32_t hub_crc32c_hardware_update(uint32_t crc, const void *data, size_t length);

#endif
