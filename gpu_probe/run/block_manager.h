#pragma once
// Pages for a batch of requests from one pool, with refcounted shared-prefix pages. The same
// manager drives both backends (block tables are plain int32, vLLM's format).
// Sharing rule (vLLM prefix caching, vllm/v1/core/kv_cache_utils.py hash_block_tokens /
// block_pool.py: only full blocks get a hash and can be cached): only FULL blocks are shared, and
// the block holding a request's last token never is: a P-token prefix shares min(P, context - 1) /
// B blocks. core's ledger applies the same rule, so page counts match its prediction.

#include "core/result.h"

#include <cstdint>
#include <vector>

namespace kvl::probe {

struct BatchAllocation {
    std::vector<std::int64_t> contexts;    // tokens per request
    std::vector<std::int32_t> blockTables; // [batch, maxBlocksPerSeq], unused entries -1
    int maxBlocksPerSeq = 0;
    std::int64_t sharedBlocks = 0; // prefix blocks referenced by every request
    std::int64_t sharedTokens = 0; // sharedBlocks x B: stored once
    std::int64_t pagesUsed = 0;    // distinct pages held
    std::int64_t pagesSaved = 0;   // (batch - 1) x sharedBlocks
    int batch() const { return int(contexts.size()); }
    std::int32_t block(int request, std::int64_t token, int blockSize) const {
        return blockTables[std::size_t(request) * maxBlocksPerSeq + std::size_t(token / blockSize)];
    }
};

class BlockManager {
public:
    // `shuffleSeed` != 0 hands pages out in a shuffled order (measures honestly: no request
    // streams through physically contiguous memory, as after a long-running server's churn).
    BlockManager(std::int64_t numBlocks, int blockSize, std::uint64_t shuffleSeed = 0);

    // Pages one batch needs (what a pool must hold), without allocating.
    static std::int64_t pagesNeeded(const std::vector<std::int64_t>& contexts,
                                    std::int64_t prefixTokens, int blockSize);
    static std::int64_t sharedBlocksFor(const std::vector<std::int64_t>& contexts,
                                        std::int64_t prefixTokens, int blockSize);

    // BadInput for an empty batch or negative lengths, OutOfMemory when the pool has too few
    // free pages.
    Result<BatchAllocation> allocate(const std::vector<std::int64_t>& contexts,
                                     std::int64_t prefixTokens);
    void release(const BatchAllocation& allocation);

    std::int64_t numBlocks() const { return std::int64_t(m_refCount.size()); }
    std::int64_t freeBlocks() const { return std::int64_t(m_free.size()); }
    int refCount(std::int32_t block) const { return m_refCount[std::size_t(block)]; }
    int blockSize() const { return m_blockSize; }

private:
    int m_blockSize;
    std::vector<std::int32_t> m_free; // popped from the back
    std::vector<int> m_refCount;
};

} // namespace kvl::probe
