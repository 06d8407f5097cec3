// The counting operator new and delete of heap_count.hpp.
//
// Every allocation carries a 64-byte header holding its size, and starts on a 64-byte boundary
// (a cache line). A 16-byte header would leave every buffer 16 bytes off the line, with
// different offsets than a plain program's (glibc gives a large buffer 16 bytes past a page),
// and a kernel's timing depends on it (compare_standalone.sh measures it). Over-aligned new
// is not used here.
#include "heap_count.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::size_t> g_heap_now{0};
std::atomic<std::size_t> g_heap_peak{0};

constexpr std::size_t kHeader = 64;

void* counted_alloc(std::size_t n) {
    void* p = std::aligned_alloc(kHeader, (n + 2 * kHeader - 1) / kHeader * kHeader);
    if (p == nullptr) throw std::bad_alloc();
    *static_cast<std::size_t*>(p) = n;
    const std::size_t now = g_heap_now.fetch_add(n) + n;
    std::size_t peak = g_heap_peak.load();
    while (now > peak && !g_heap_peak.compare_exchange_weak(peak, now)) {
    }
    return static_cast<char*>(p) + kHeader;
}

void counted_free(void* q) noexcept {
    if (q == nullptr) return;
    void* p = static_cast<char*>(q) - kHeader;
    g_heap_now.fetch_sub(*static_cast<std::size_t*>(p));
    std::free(p);
}

}  // namespace

namespace wbbench {
std::size_t heap_reset_peak() {
    const std::size_t now = g_heap_now.load();
    g_heap_peak.store(now);
    return now;
}
std::size_t heap_peak() { return g_heap_peak.load(); }
}  // namespace wbbench

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    try {
        return counted_alloc(n);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }
