/// @file serial_blas.hpp
/// @brief OpenBLAS on one thread for a scope: both engines' steps run their products serially.
///
/// OpenBLAS's threaded sgemm sums in another order than its serial one (the bits of a
/// [128, 32] x [32, 128] product differ between 1 and 2 threads), and the fast trainer's
/// OpenMP threads already split its GEMMs: so a step sets OpenBLAS to one thread and gives it
/// its previous count back afterwards, even when the step throws.
#pragma once

// OpenBLAS's own setter and getter, declared here because <cblas.h> clashes with xtensor-blas'
// copy (the same declarations as <cblas.h>'s, so a file may include both).
/// OpenBLAS's thread count for the calls that follow (OpenBLAS's own function).
/// @param num_threads the threads its products may use, >= 1
extern "C" void openblas_set_num_threads(int num_threads);
/// OpenBLAS's thread count now (OpenBLAS's own function).
/// @return the threads its products use
extern "C" int openblas_get_num_threads(void);

namespace wb::minigpt {

/// OpenBLAS on one thread while it lives; the thread count it found, back when it goes.
struct SerialBlas {
    int before;  ///< OpenBLAS's thread count when the scope began
    SerialBlas() : before(openblas_get_num_threads()) {
        if (before != 1) openblas_set_num_threads(1);
    }
    ~SerialBlas() {
        if (before != 1) openblas_set_num_threads(before);
    }
    SerialBlas(const SerialBlas&) = delete;
    SerialBlas& operator=(const SerialBlas&) = delete;
    SerialBlas(SerialBlas&&) = delete;
    SerialBlas& operator=(SerialBlas&&) = delete;
};

}  // namespace wb::minigpt
