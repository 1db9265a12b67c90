/* A stand-in for Windows' bcryptprimitives.dll, for Wine releases before 9.0 (Debian 12 ships
 * 8.0), which lack it: Rust's std takes its random numbers from ProcessPrng there since Rust
 * 1.78, so no Rust program starts without it. Test use only (scripts/test builds it into
 * target/ and puts it in the test Wine prefix); never shipped. ProcessPrng is answered from
 * RtlGenRandom (advapi32's SystemFunction036), which every Wine has. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
