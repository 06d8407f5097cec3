// The MPI program of the data-parallel checks: `mpirun -np W dataparallel_worker SCENARIO OUT`
// runs one scenario on every rank with the chapter's functions and writes what rank r ends with
// to OUT.r (raw float32). A rank whose call throws prints the message and aborts the job, so
// that no other rank waits for it.
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include <mpi.h>
#include <xtensor/xview.hpp>

#include "10-data-parallel/data_parallel.hpp"
#include "scenario.hpp"

// Under AddressSanitizer (the asan preset) the leak check stays off in this program: OpenMPI
// keeps memory it never frees past MPI_Finalize (its components and operators), which the leak
// check would report on every rank and fail the job. Memory errors are still caught. Read by
// the sanitizer's runtime only; an ordinary build never calls it. An ASAN_OPTIONS that names
// detect_leaks overrides it, so the presets' ASAN_OPTIONS leave detect_leaks at its default.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }

// The buffers of the MPI_Iallreduce calls, in the order they were made: this program's own
// MPI_Iallreduce (MPI's profiling interface) notes each call, then hands it to PMPI_Iallreduce.
std::vector<const void*> g_iallreduce_buffers;

extern "C" int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
    g_iallreduce_buffers.push_back(recvbuf);
    return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

namespace {

using namespace wbtest;

// Rank `rank`'s gradients in the checks of the mean: element i is dp_grad_value(i, rank).
wb::GptParams<float> rank_gradients(int rank) {
    wb::GptParams<float> g = wb::zeros_like(wb::init_gpt<float>(dp_config(), kDpSeed));
    std::size_t i = 0;
    for (auto& t : wb::parameters(g)) {
        for (std::size_t j = 0; j < t.size; ++j) t.data[j] = dp_grad_value(i++, rank);
    }
    return g;
}

void write(const std::string& path, const std::vector<float>& values) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(float)));
}

std::vector<float> flat_of(const wb::GptParams<float>& p) {
    std::vector<float> out;
    for (const auto& t : wb::parameters(p)) out.insert(out.end(), t.data, t.data + t.size);
    return out;
}

// Rank `rank`'s gradients of its even share of the batch of kDpEvenBatch sequences.
wb::GptParams<float> shard_gradients(const wb::GptParams<float>& params, int rank, int W) {
    const wb::TokenIds batch = dp_batch(kDpEvenBatch, 0);
    const std::size_t per = kDpEvenBatch / static_cast<std::size_t>(W);
    wb::TokenIds mine = xt::view(batch, xt::range(rank * per, (rank + 1) * per), xt::all());
    const wb::NextToken nt = wb::shift_for_next_token(mine);
    wb::GptCache<float> cache;
    wb::gpt_forward(params, dp_config(), nt.inputs, nt.targets, -1, cache);
    wb::GptParams<float> grads = wb::zeros_like(params);
    wb::gpt_backward(params, dp_config(), cache, grads);
    return grads;
}

std::vector<float> run(const std::string& scenario, int rank, int W) {
    MPI_Comm comm = MPI_COMM_WORLD;
    const wb::GptConfig c = dp_config();
    if (scenario == "broadcast") {
        wb::GptParams<float> p = wb::init_gpt<float>(c, kDpSeed + static_cast<unsigned>(rank));
        wb::broadcast_parameters(p, comm);
        return flat_of(p);
    }
    if (scenario == "mean-tensor" || scenario == "mean-flat" || scenario == "mean-nonblocking") {
        wb::GptParams<float> g = rank_gradients(rank);
        if (scenario == "mean-tensor") {
            wb::allreduce_mean_per_tensor(g, comm);
        } else if (scenario == "mean-nonblocking") {
            wb::PendingMean pending = wb::start_allreduce_mean(g, comm);
            // Work while the sums travel: a forward of the model on this rank's rows.
            const wb::GptParams<float> p = wb::init_gpt<float>(c, kDpSeed);
            const wb::NextToken nt = wb::shift_for_next_token(dp_batch(2, rank));
            wb::GptCache<float> cache;
            wb::gpt_forward(p, c, nt.inputs, nt.targets, -1, cache);
            wb::finish_allreduce_mean(pending);
            if (pending.grads != nullptr || !pending.requests.empty()) {
                throw std::runtime_error("finish_allreduce_mean left pending not emptied");
            }
        } else {
            wb::allreduce_mean_flat(g, comm);
        }
        return flat_of(g);
    }
    if (scenario == "mean-split") {
        // Two communicators of 2 ranks (0, 1 and 2, 3): each mean is of the 2 ranks of the
        // communicator given, not of every rank of MPI_COMM_WORLD. The three means end to end.
        MPI_Comm half = MPI_COMM_NULL;
        MPI_Comm_split(comm, rank / 2, rank, &half);
        wb::GptParams<float> a = rank_gradients(rank), b = rank_gradients(rank),
                             d = rank_gradients(rank);
        wb::allreduce_mean_per_tensor(a, half);
        wb::allreduce_mean_flat(b, half);
        wb::PendingMean pending = wb::start_allreduce_mean(d, half);
        wb::finish_allreduce_mean(pending);
        MPI_Comm_free(&half);
        std::vector<float> out = flat_of(a), more = flat_of(b), last = flat_of(d);
        out.insert(out.end(), more.begin(), more.end());
        out.insert(out.end(), last.begin(), last.end());
        return out;
    }
    if (scenario == "start-order") {
        // Which tensor of parameters() each MPI_Iallreduce of start_allreduce_mean reduces.
        wb::GptParams<float> g = rank_gradients(rank);
        const auto refs = wb::parameters(g);
        g_iallreduce_buffers.clear();
        wb::PendingMean pending = wb::start_allreduce_mean(g, comm);
        const std::vector<const void*> seen = g_iallreduce_buffers;
        wb::finish_allreduce_mean(pending);
        std::vector<float> out;
        for (const void* buffer : seen) {
            float index = -1.0f;
            for (std::size_t k = 0; k < refs.size(); ++k) {
                if (refs[k].data == buffer) index = static_cast<float>(k);
            }
            out.push_back(index);
        }
        return out;
    }
    if (scenario == "allreduce-real") {
        const wb::GptParams<float> p = wb::init_gpt<float>(c, kDpSeed);
        wb::GptParams<float> g = shard_gradients(p, rank, W);
        wb::allreduce_mean_flat(g, comm);
        return flat_of(g);
    }
    if (scenario == "grads" || scenario == "grads-reused" || scenario == "grads-one-each") {
        // grads-reused: grads already holds another model, shaped like params, to overwrite.
        // grads-one-each: B = W, one sequence per rank.
        const wb::GptParams<float> p = wb::init_gpt<float>(c, kDpSeed);
        wb::GptParams<float> g;
        if (scenario == "grads-reused") g = wb::init_gpt<float>(c, kDpSeed + 1);
        const std::size_t B = scenario == "grads-one-each" ? static_cast<std::size_t>(W) : kDpBatch;
        const float loss = wb::data_parallel_gradients(p, c, dp_batch(B, 0), g, comm);
        std::vector<float> out = flat_of(g);
        out.push_back(loss);
        return out;
    }
    if (scenario == "train") {
        // Every rank but 0 starts from another model: the broadcast makes them one.
        wb::GptParams<float> p = wb::init_gpt<float>(c, kDpSeed + static_cast<unsigned>(rank));
        wb::broadcast_parameters(p, comm);
        wb::AdamWState<float> state;
        std::vector<float> losses;
        for (int step = 0; step < kDpSteps; ++step) {
            losses.push_back(
                wb::data_parallel_step(p, c, state, dp_adamw(), dp_batch(kDpBatch, step), comm));
        }
        std::vector<float> out = flat_of(p);
        out.insert(out.end(), losses.begin(), losses.end());
        return out;
    }
    if (scenario == "skipped-collective") {
        // Rank 0 never calls tree_sum, so rank 1 waits in it for a broadcast that never
        // comes: the job hangs, and the checks' time limit must stop it.
        if (rank != 0) {
            std::vector<wb::Vec<float>> mine(1, wb::Vec<float>::from_shape({4}));
            wb::tree_sum(std::move(mine), static_cast<std::size_t>(W), comm);
        }
        return {};
    }
    if (scenario == "errors") {
        // Each bad call must throw the promised type naming the function and the counts, on
        // every rank, before any message is sent (else the job would hang): 1 when it does.
        const auto names = [](const std::string& what, std::initializer_list<std::string> facts) {
            for (const auto& f : facts) {
                if (what.find(f) == std::string::npos) return 0.0f;
            }
            return 1.0f;
        };
        std::vector<float> out;
        const auto expect = [&](auto call, auto type_tag,
                                std::initializer_list<std::string> facts) {
            using Error = decltype(type_tag);
            try {
                call();
                out.push_back(0.0f);
            } catch (const Error& e) {
                out.push_back(names(e.what(), facts));
            } catch (const wb::NotImplemented&) {
                throw;  // a stub: the job stops with its message
            } catch (const std::exception&) {
                out.push_back(0.0f);
            }
        };
        const wb::Vec<float> one = wb::Vec<float>::from_shape({3});
        const std::string ranks = std::to_string(W);
        // M = 1 partial sum for W = 2 ranks
        expect([&] { wb::tree_sum({one}, 1, comm); }, wb::ValueError{""},
               {"wb::tree_sum", "1", ranks});
        // rank r holds none of its 2 partial sums of M = 2·W
        expect([&] { wb::tree_sum({}, 2 * static_cast<std::size_t>(W), comm); }, wb::ValueError{""},
               {"wb::tree_sum", "0", "2"});
        // two partial sums of different sizes
        const wb::Vec<float> two = wb::Vec<float>::from_shape({4});
        expect(
            [&] {
                wb::tree_sum({one, two}, 2 * static_cast<std::size_t>(W), comm);
            },
            wb::ShapeError{""}, {"wb::tree_sum", "3", "4"});
        // B = 1 sequence for W = 2 ranks
        wb::GptParams<float> g;
        expect(
            [&] {
                wb::data_parallel_gradients(wb::init_gpt<float>(c, kDpSeed), c, dp_batch(1, 0), g,
                                            comm);
            },
            wb::ValueError{""}, {"wb::data_parallel_gradients", "1", ranks});
        // sequences of 1 token: no target
        const wb::TokenIds short_rows = wb::TokenIds::from_shape({4, 1});
        expect(
            [&] {
                wb::data_parallel_gradients(wb::init_gpt<float>(c, kDpSeed), c, short_rows * 0, g,
                                            comm);
            },
            wb::ShapeError{""}, {"wb::data_parallel_gradients", "[4, 1]"});
        // an id outside [0, V) in the last row, which only rank W - 1 computes: every rank must
        // refuse the batch (a rank that went on would wait in tree_sum for one that threw)
        wb::TokenIds bad_id = dp_batch(kDpBatch, 0);
        bad_id(kDpBatch - 1, 2) = static_cast<std::int64_t>(c.V) + 7;
        expect(
            [&] {
                wb::data_parallel_gradients(wb::init_gpt<float>(c, kDpSeed), c, bad_id, g, comm);
            },
            wb::ValueError{""}, {"wb::data_parallel_gradients", std::to_string(c.V + 7)});
        // a bad learning rate: refused, the parameters left as they were
        wb::GptParams<float> p = wb::init_gpt<float>(c, kDpSeed);
        const std::vector<float> before = flat_of(p);
        wb::AdamWState<float> state;
        wb::AdamWConfig bad = dp_adamw();
        bad.lr = -1.0f;
        expect([&] { wb::data_parallel_step(p, c, state, bad, dp_batch(kDpBatch, 0), comm); },
               wb::ValueError{""}, {"lr"});
        out.push_back(flat_of(p) == before ? 1.0f : 0.0f);
        return out;
    }
    throw std::invalid_argument("unknown scenario " + scenario);
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, W = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    if (argc != 3) {
        if (rank == 0) std::fprintf(stderr, "usage: %s SCENARIO OUT\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    try {
        write(std::string(argv[2]) + "." + std::to_string(rank), run(argv[1], rank, W));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d of %d: %s\n", rank, W, e.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Finalize();
    return 0;
}
