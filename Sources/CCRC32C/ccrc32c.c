// CRC-32C with the CPU's own instructions; the portable table version lives in Swift (HubLog/CRC32C.swift).
#include "ccrc32c.h"
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

int hub_crc32c_hardware_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2")))
uint32_t hub_crc32c_hardware_update(uint32_t crc, const void *data, size_t length) {
    const unsigned char *p = data;
    uint64_t c = crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
        p += 8;
        length -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (length > 0) {
        c32 = __builtin_ia32_crc32qi(c32, *p);
        p++;
        length--;
    }
    return c32;
}

#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif

int hub_crc32c_hardware_available(void) {
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
}

__attribute__((target("+crc")))
uint32_t hub_crc32c_hardware_update(uint32_t crc, const void *data, size_t length) {
    const unsigned char *p = data;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = __builtin_aarch64_crc32cx(crc, word);
        p += 8;
        length -= 8;
    }
    while (length > 0) {
        crc = __builtin_aarch64_crc32cb(crc, *p);
        p++;
        length--;
    }
    return crc;
}

#else
int hub_crc32c_hardware_available(void) { return 0; }
uint32_t hub_crc32c_hardware_update(uint32_t crc, const void *data, size_t length) {
    (void)data; (void)length;
    return crc;
}
#endif
