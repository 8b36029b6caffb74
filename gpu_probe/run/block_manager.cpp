#include "gpu_probe/run/block_manager.h"

#include <algorithm>
#include <random>

namespace kvl::probe {

BlockManager::BlockManager(std::int64_t numBlocks, int blockSize, std::uint64_t shuffleSeed)
    : m_blockSize(blockSize) {
    numBlocks = std::clamp<std::int64_t>(numBlocks, 0, INT32_MAX);
    m_refCount.assign(std::size_t(numBlocks), 0);
    m_free.resize(std::size_t(numBlocks));
    for (std::int64_t i = 0; i < numBlocks; ++i)
        m_free[std::size_t(i)] = std::int32_t(numBlocks - 1 - i); // block 0 handed out first
    if (shuffleSeed != 0) {
        std::mt19937_64 rng(shuffleSeed);
        std::shuffle(m_free.begin(), m_free.end(), rng);
    }
}

std::int64_t BlockManager::sharedBlocksFor(const std::vector<std::int64_t>& contexts,
                                           std::int64_t prefixTokens, int blockSize) {
    if (contexts.size() < 2 || prefixTokens <= 0 || blockSize <= 0)
        return 0;
    std::int64_t shared = prefixTokens / blockSize;
    for (std::int64_t context : contexts)
        shared = std::min(
            shared, std::max<std::int64_t>(0, std::min(prefixTokens, context - 1) / blockSize));
    return shared;
}

std::int64_t BlockManager::pagesNeeded(const std::vector<std::int64_t>& contexts,
                                       std::int64_t prefixTokens, int blockSize) {
    const std::int64_t shared = sharedBlocksFor(contexts, prefixTokens, blockSize);
    std::int64_t pages = shared;
    for (std::int64_t context : contexts)
        pages += (context + blockSize - 1) / blockSize - shared;
    return pages;
}

Result<BatchAllocation> BlockManager::allocate(const std::vector<std::int64_t>& contexts,
                                               std::int64_t prefixTokens) {
    if (contexts.empty())
        return Error{ErrorCode::BadInput, "block manager: empty batch"};
    if (prefixTokens < 0)
        return Error{ErrorCode::BadInput, "block manager: negative prefix"};
    std::int64_t maxBlocks = 0;
    for (std::int64_t context : contexts) {
        if (context < 0)
            return Error{ErrorCode::BadInput, "block manager: negative context"};
        maxBlocks = std::max(maxBlocks, (context + m_blockSize - 1) / m_blockSize);
    }
    if (maxBlocks > INT32_MAX / std::int64_t(contexts.size()))
        return Error{ErrorCode::BadInput, "block manager: block table too large"};
    const std::int64_t need = pagesNeeded(contexts, prefixTokens, m_blockSize);
    if (need > freeBlocks())
        return Error{ErrorCode::OutOfMemory, "block manager: out of pages (" +
                                                 std::to_string(need) + " needed, " +
                                                 std::to_string(freeBlocks()) + " free)"};
    BatchAllocation allocation;
    allocation.contexts = contexts;
    allocation.maxBlocksPerSeq = int(std::max<std::int64_t>(maxBlocks, 1));
    allocation.blockTables.assign(contexts.size() * std::size_t(allocation.maxBlocksPerSeq), -1);
    allocation.sharedBlocks = sharedBlocksFor(contexts, prefixTokens, m_blockSize);
    allocation.sharedTokens = allocation.sharedBlocks * m_blockSize;
    auto take = [&] {
        const std::int32_t block = m_free.back();
        m_free.pop_back();
        m_refCount[std::size_t(block)] = 1;
        return block;
    };
    std::vector<std::int32_t> prefix;
    for (std::int64_t i = 0; i < allocation.sharedBlocks; ++i)
        prefix.push_back(take());
    for (std::size_t r = 0; r < contexts.size(); ++r) {
        const std::int64_t blocks = (contexts[r] + m_blockSize - 1) / m_blockSize;
        std::int32_t* row =
            allocation.blockTables.data() + r * std::size_t(allocation.maxBlocksPerSeq);
        for (std::int64_t i = 0; i < blocks; ++i) {
            if (i < allocation.sharedBlocks) {
                row[i] = prefix[std::size_t(i)];
                if (r > 0)
                    ++m_refCount[std::size_t(row[i])];
            } else {
                row[i] = take();
            }
        }
    }
    allocation.pagesUsed = need;
    allocation.pagesSaved = allocation.sharedBlocks * (std::int64_t(contexts.size()) - 1);
    return allocation;
}

void BlockManager::release(const BatchAllocation& allocation) {
    for (std::size_t r = 0; r < allocation.contexts.size(); ++r) {
        const std::int64_t blocks = (allocation.contexts[r] + m_blockSize - 1) / m_blockSize;
        for (std::int64_t i = 0; i < blocks; ++i) {
            const std::int32_t block =
                allocation
                    .blockTables[r * std::size_t(allocation.maxBlocksPerSeq) + std::size_t(i)];
            if (block < 0 || block >= std::int32_t(m_refCount.size()) ||
                m_refCount[std::size_t(block)] == 0)
                continue;
            if (--m_refCount[std::size_t(block)] == 0)
                m_free.push_back(block);
        }
    }
}

} // namespace kvl::probe
