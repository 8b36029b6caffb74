#include "planner.h"
#include "saturating.h"

#include "capacity.h"
#include "engine.h"
#include "ledger.h"
#include "speed.h"
#include "units.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>

namespace kvl::core {

namespace {

// The scenario vLLM would run: this GPU and layout, started with a max model length that holds
// the context, on the GPU's real memory.
Scenario planScenario(const Scenario& base, const GpuSpec& gpu, const Layout& layout,
                      std::int64_t context) {
    Scenario s = base;
    s.hardware.gpu = gpu;
    applyLayout(s, layout);
    s.hardware.kvMemoryBytes.reset();
    s.workload.context = context;
    s.workload.maxModelLen = std::max(context, base.workload.maxModelLen);
    s.workload.targetRequests = 0;
    return s;
}

std::vector<int> divisors(int n, int upTo) {
    std::vector<int> out;
    for (int d = 1; d <= std::min(n, upTo); ++d)
        if (n % d == 0)
            out.push_back(d);
    return out;
}

void fillDeployment(Deployment& d, const ReplicaCapacity& c, CapacityModel& model,
                    std::int64_t users, int gpusPerNode) {
    d.weightsBytesPerGpu = c.weightsBytesPerGpu;
    d.kvPoolBytesPerGpu = c.kvPoolBytesPerGpu;
    d.withinOneNode = d.layout.tp * d.layout.pp <= gpusPerNode;
    d.maxNumSeqs = effectiveMaxNumSeqs(d.scenario);
    if (!c.ok) {
        d.reason = c.reason;
        return;
    }
    d.requestsMemoryHolds = c.requests;
    d.requestsPerReplica = std::min(c.requests, d.maxNumSeqs);
    d.cappedByMaxNumSeqs = c.requests > d.maxNumSeqs;
    d.clusterRequests = d.requestsPerReplica * d.layout.dp;
    d.fits = d.clusterRequests >= users;
    // The users spread over the replicas; the busiest replica holds ceil(N / DP).
    const std::int64_t onReplica = std::min(ceilDiv(users, d.layout.dp), d.requestsPerReplica);
    d.kvBytesPerGpu = model.kvBytesForRequests(onReplica);
    d.headroomBytesPerGpu = std::max<std::int64_t>(0, d.kvPoolBytesPerGpu - d.kvBytesPerGpu);
    // Speed at the users' concurrency: the busiest replica's step.
    if (d.fits) {
        const DecodeStep step = decodeStep(d.scenario, std::max<std::int64_t>(1, onReplica),
                                           d.scenario.workload.context);
        d.decodeStepMs = step.stepMs;
        d.tokensPerSecondPerUser = step.tokensPerSecondPerUser;
        d.clusterTokensPerSecond =
            step.tokensPerSecondPerUser * static_cast<double>(std::min(users, d.clusterRequests));
    }
    if (!d.fits)
        d.reason = withThousands(d.clusterRequests) + " of " + withThousands(users) + " users fit" +
                   (d.cappedByMaxNumSeqs
                        ? " (max_num_seqs " + withThousands(d.maxNumSeqs) + " per replica)"
                        : std::string());
}

// Best first among layouts of the same GPU count: inside one node, fewer pipeline stages,
// then by the rank (throughput or capacity), then the plainer layout.
bool better(const Deployment& a, const Deployment& b, PlanRank rank) {
    // A flagged layout (too slow, too many stages) after one that is not, even of more GPUs.
    if (a.flag.empty() != b.flag.empty())
        return a.flag.empty();
    if (a.layout.gpus() != b.layout.gpus())
        return a.layout.gpus() < b.layout.gpus();
    if (a.withinOneNode != b.withinOneNode)
        return a.withinOneNode;
    if (a.layout.pp != b.layout.pp)
        return a.layout.pp < b.layout.pp;
    if (rank == PlanRank::Throughput && a.clusterTokensPerSecond != b.clusterTokensPerSecond)
        return a.clusterTokensPerSecond > b.clusterTokensPerSecond;
    if (a.clusterRequests != b.clusterRequests)
        return a.clusterRequests > b.clusterRequests;
    if (a.layout.ep != b.layout.ep)
        return !a.layout.ep;
    if (a.layout.dcp != b.layout.dcp)
        return a.layout.dcp < b.layout.dcp;
    return a.layout.tp < b.layout.tp;
}

// The search of one GPU kind's layouts (planGpu): TP over the heads' divisors, DCP, PP and
// EP, then DP as the users need; what it finds and, should nothing fit, why.
struct GpuSearch {
    GpuSearch(const PlanRequest& r, const GpuSpec& g, GpuPlan& p) : req(r), gpu(g), gp(p) {}

    const PlanRequest& req;
    const GpuSpec& gpu;
    GpuPlan& gp;
    const ModelSpec& m = req.base.model;
    const int maxGpus = std::max(1, req.maxGpus);
    const std::int64_t users = std::max<std::int64_t>(1, req.users);
    // The fewest GPUs of a plan without a flag bounds the search; a flagged plan (too slow
    // per user, too many stages) does not, so that a few more GPUs that run fast enough are
    // still found (70B at 32K x 50 on H100s: TP 2 x PP 5 at 7.9 tokens/s, TP 4 x DP 3 fast).
    int best = maxGpus + 1;
    int bestFlagged = maxGpus + 1;
    std::vector<Deployment> found;
    // The most memory-generous layout tried that still failed, to say why.
    ReplicaCapacity widest;
    int widestGpus = 0;
    Layout widestLayout;
    // max_num_seqs depends on the GPU and the max model length, not on the layout.
    const Scenario plain = planScenario(req.base, gpu, Layout{}, req.context);
    const std::int64_t maxNumSeqs = effectiveMaxNumSeqs(plain);
    // A cheap test first: a layout whose largest stage's weights and reserves already take all
    // the memory vLLM may use cannot hold anything.
    const WeightModel weights = weightModel(plain);
    const std::int64_t requested = static_cast<std::int64_t>(static_cast<double>(gpu.memoryBytes) *
                                                             gpuMemoryUtilization(plain));

    // Returns the largest stage's weights when hopeless, 0 otherwise.
    std::int64_t hopeless(const Layout& l) const {
        const Reserves r = estimateReserves(plain, l);
        const std::int64_t reserves =
            plain.hardware.activationBytes.value_or(r.activation) +
            plain.hardware.overheadBytes.value_or(
                r.nonTorch + plain.hardware.cudaGraphBytes.value_or(r.cudaGraphs));
        const auto stages = pipelineStages(std::max(1, m.numLayers()), l.pp);
        std::int64_t most = 0;
        for (std::size_t i = 0; i < stages.size(); ++i)
            most =
                std::max(most, weightsPerGpu(weights, l, stages[i].first, stages[i].second,
                                             static_cast<int>(i), static_cast<int>(stages.size())));
        return satAdd(most, reserves) >= requested ? most : 0;
    }

    void search() {
        for (const int tp : divisors(m.qHeads, maxGpus)) {
            if (!checkLayout(m, Layout{tp, 1, 1, false, 1}))
                continue;
            for (const int dcp : divisors(tp, tp)) {
                if (!checkLayout(m, Layout{tp, 1, 1, false, dcp}))
                    continue;
                CapacityModel model(
                    planScenario(req.base, gpu, Layout{tp, 1, 1, false, dcp}, req.context));
                for (int pp = 1; pp <= m.numLayers() && tp * pp <= std::min(maxGpus, best); ++pp) {
                    for (const bool ep : {false, true}) {
                        if (ep && !m.isMoe())
                            continue;
                        const Layout l{tp, pp, 1, ep, dcp};
                        if (checkLayout(m, l))
                            tryDataParallel(model, l);
                    }
                }
            }
        }
    }

    // Without EP the weights are the same for any DP: one evaluation sets the replica's
    // capacity and DP follows. With EP the experts spread over DP, so more replicas also mean
    // more room on each.
    void tryDataParallel(CapacityModel& model, Layout l) {
        const int tp = l.tp, pp = l.pp, dcp = l.dcp;
        const bool ep = l.ep;
        for (int dp = 1; tp * pp * dp <= std::min(maxGpus, best); ++dp) {
            const Layout tried{tp, pp, ep ? dp : 1, ep, dcp};
            if (const std::int64_t heavy = hopeless(tried)) {
                if (tried.gpus() >= widestGpus) {
                    widest = ReplicaCapacity{};
                    widest.weightsBytesPerGpu = heavy;
                    widestGpus = tried.gpus();
                    widestLayout = tried;
                }
                if (!ep)
                    break;
                continue;
            }
            const ReplicaCapacity c = model.evaluate(pp, ep ? dp : 1, ep);
            if (!c.ok) {
                if (tp * pp * dp >= widestGpus) {
                    widest = c;
                    widestGpus = tp * pp * dp;
                    widestLayout = Layout{tp, pp, dp, ep, dcp};
                }
                if (!ep)
                    break;
                continue;
            }
            const std::int64_t perReplica = std::min(c.requests, maxNumSeqs);
            noteNearest(perReplica, Layout{tp, pp, dp, ep, dcp});
            int needDp = dp;
            if (!ep)
                needDp = static_cast<int>(
                    std::min<std::int64_t>(ceilDiv(users, perReplica), maxGpus + 1));
            else if (perReplica * dp < users)
                continue;
            l.dp = needDp;
            if (tp * pp * needDp > std::min(maxGpus, best))
                break;
            Deployment d;
            d.layout = l;
            d.scenario = planScenario(req.base, gpu, l, req.context);
            const ReplicaCapacity at = ep ? c : model.evaluate(pp, needDp, false);
            fillDeployment(d, at, model, users, req.gpusPerNode);
            if (d.fits) {
                d.flag = planFlag(d, req);
                int& bound = d.flag.empty() ? best : bestFlagged;
                bound = std::min(bound, l.gpus());
                found.push_back(std::move(d));
            }
            break;
        }
    }

    // The most users this TP x PP (x EP) holds within maxGpus, should no layout hold them all:
    // the nearest feasible answer the reason gives. `l` is the layout tried, at its DP.
    void noteNearest(std::int64_t perReplica, const Layout& l) {
        if (perReplica <= 0)
            return;
        const int mostDp = l.ep ? l.dp : maxGpus / (l.tp * l.pp);
        const std::int64_t held = satMul(perReplica, mostDp);
        const Layout at{l.tp, l.pp, mostDp, l.ep, l.dcp};
        if (mostDp >= 1 && (held > gp.nearestUsers ||
                            (held == gp.nearestUsers && at.gpus() < gp.nearestLayout.gpus()))) {
            gp.nearestUsers = held;
            gp.nearestPerReplica = perReplica;
            gp.nearestLayout = at;
        }
    }

    // The unflagged plans of the fewest GPUs, then (said, not recommended) the flagged ones of
    // the fewest GPUs where those are fewer still.
    void keepFewest() {
        found.erase(std::remove_if(found.begin(), found.end(),
                                   [&](const Deployment& d) {
                                       return d.flag.empty() ? d.layout.gpus() != best
                                                             : d.layout.gpus() != bestFlagged ||
                                                                   bestFlagged >= best;
                                   }),
                    found.end());
        std::sort(found.begin(), found.end(),
                  [&](const Deployment& a, const Deployment& b) { return better(a, b, req.rank); });
        gp.layouts = std::move(found);
        gp.fits = !gp.layouts.empty();
    }

    // Nothing fits: why.
    void explainNoFit() {
        if (gp.nearestUsers > 0) {
            // Memory for the users binds, not the heads or the weights: say how many fit at
            // most and on what, and that the rest need more GPUs than allowed.
            const Layout& l = gp.nearestLayout;
            gp.reason = "memory for the users: at most " + withThousands(gp.nearestUsers) +
                        " fit on " + std::to_string(l.gpus()) + " x " + gpu.name + " as " +
                        layoutLabel(l);
            if (l.dp > 1)
                gp.reason += " (" + withThousands(gp.nearestPerReplica) + " per replica)";
            gp.reason += "; " + withThousands(users) + " need more than " +
                         std::to_string(maxGpus) + " GPUs";
        } else if (widestGpus == 0) {
            gp.reason = "no layout of at most " + std::to_string(maxGpus) + " GPUs is valid for " +
                        m.name + " (tensor parallel must divide its heads)";
        } else {
            const Scenario s = planScenario(req.base, gpu, widestLayout, req.context);
            const std::int64_t usable = static_cast<std::int64_t>(
                static_cast<double>(gpu.memoryBytes) * gpuMemoryUtilization(s));
            const LedgerResult r = computeLedger(s);
            const std::int64_t reserves = r.activationBytes + r.overheadBytes;
            const std::int64_t weightBytes = widest.weightsBytesPerGpu;
            const bool weightsDoNotFit = satAdd(weightBytes, reserves) >= usable;
            gp.memoryNeededBytes = satAdd(satAdd(weightBytes, reserves),
                                          weightsDoNotFit ? 0 : r.kvBytesPerRequestPerGpu);
            gp.reason = (weightsDoNotFit ? "the weights do not fit" : "one request does not fit") +
                        std::string(" even as ") + layoutLabel(widestLayout) + ": it needs " +
                        formatBytes(gp.memoryNeededBytes) + " per GPU, " + gpu.name + " gives " +
                        formatBytes(usable);
            if (!weightsDoNotFit && !widest.reason.empty() &&
                widest.reason.find("vLLM refuses") != std::string::npos)
                gp.reason += " (" + widest.reason + ")";
        }
    }
};

GpuPlan planGpu(const PlanRequest& req, const GpuSpec& gpu) {
    GpuPlan gp;
    gp.gpu = gpu;
    GpuSearch search(req, gpu, gp);
    search.search();
    search.keepFewest();
    if (!gp.fits)
        search.explainNoFit();
    return gp;
}

} // namespace

std::string planFlag(const Deployment& d, const PlanRequest& req) {
    std::string flag;
    if (req.minTokensPerSecondPerUser > 0 &&
        d.tokensPerSecondPerUser < req.minTokensPerSecondPerUser) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%.1f tokens/s per user, under the floor of %g",
                      d.tokensPerSecondPerUser, req.minTokensPerSecondPerUser);
        flag = buf;
    }
    if (d.layout.pp > kMaxRecommendedPipelineStages)
        flag += (flag.empty() ? "" : "; ") + std::string("PP ") + std::to_string(d.layout.pp) +
                ", over " + std::to_string(kMaxRecommendedPipelineStages) + " pipeline stages";
    return flag;
}

namespace {
bool flagged(const GpuPlan& g) {
    return g.fits && !g.layouts.empty() && !g.layouts.front().flag.empty();
}
} // namespace

std::vector<const GpuPlan*> PlanResult::bestFirst() const {
    std::vector<const GpuPlan*> out;
    for (const auto& g : gpus)
        out.push_back(&g);
    std::stable_sort(out.begin(), out.end(), [this](const GpuPlan* a, const GpuPlan* b) {
        // With an SLO (plan --rate), meeting it ranks above being the scenario's GPU.
        if (rankedBySlo && a->fits && b->fits &&
            a->layouts.front().meetsSlo != b->layouts.front().meetsSlo)
            return a->layouts.front().meetsSlo;
        const bool pa = !preferredGpu.empty() && a->gpu.id == preferredGpu;
        const bool pb = !preferredGpu.empty() && b->gpu.id == preferredGpu;
        if (pa != pb)
            return pa;
        if (a->fits != b->fits)
            return a->fits;
        if (!a->fits)
            return false;
        if (rankedBySlo && a->layouts.front().meetsSlo != b->layouts.front().meetsSlo)
            return a->layouts.front().meetsSlo;
        if (flagged(*a) != flagged(*b))
            return !flagged(*a);
        return a->layouts.front().layout.gpus() < b->layouts.front().layout.gpus();
    });
    return out;
}

const GpuPlan* PlanResult::recommended() const {
    const auto order = bestFirst();
    // With an SLO, a plan that meets it comes before one that only holds the users.
    if (rankedBySlo)
        for (const GpuPlan* g : order)
            if (g->fits && !flagged(*g) && g->layouts.front().meetsSlo)
                return g;
    for (const GpuPlan* g : order)
        if (g->fits && !flagged(*g))
            return g;
    for (const GpuPlan* g : order)
        if (g->fits)
            return g;
    return nullptr;
}

Deployment evaluateDeployment(const Scenario& base, const GpuSpec& gpu, const Layout& layout,
                              std::int64_t users, std::int64_t context, int gpusPerNode) {
    Deployment d;
    d.layout = layout;
    d.scenario = planScenario(base, gpu, layout, context);
    if (auto st = checkLayout(base.model, layout); !st) {
        d.reason = st.error().message;
        return d;
    }
    CapacityModel model(d.scenario);
    const ReplicaCapacity c = model.evaluate(layout.pp, layout.dp, layout.ep);
    fillDeployment(d, c, model, std::max<std::int64_t>(1, users), gpusPerNode);
    return d;
}

PlanResult planDeployments(const PlanRequest& request) {
    PlanResult out;
    out.gpus.reserve(request.gpus.size());
    out.preferredGpu = request.preferredGpu;
    for (const auto& g : request.gpus)
        out.gpus.push_back(planGpu(request, g));
    return out;
}

} // namespace kvl::core
