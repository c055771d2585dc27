// SPDX-License-Identifier: MIT
// Scenario sections, in file order: name, seed, nodes, data, model, topology, algorithm,
// system, stop, eval, output.
#include "sim/scenario/run_plan.hpp"

#include "data/load_dataset.hpp"
#include "models/make_model.hpp"
#include "sim/core/build_info.hpp"
#include "sim/core/errors.hpp"
#include "sim/optimizers/algorithm_setup.hpp"
#include "sim/optimizers/ordering/order_setup.hpp"
#include "sim/scenario/gradient_backend.hpp"
#include "sim/scenario/yaml_tree.hpp"
#include "topologies/make_topology.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>

namespace dtsim {
namespace {

constexpr int kMaxNodes =
    1000000; // the timing-only scale; the memory check refuses big models first
// Refuse runs whose node models and message buffers alone would exceed this.
constexpr double kMaxMemoryBytes = 16.0 * (1ull << 30);

// The fewest vectors per node a resident backend keeps when the method attaches: its model
// and gradient rows (methods say how many more, Algorithm::resident_vectors_per_node).
constexpr std::size_t kLeastResidentVectors = 2;

// What the plan's backend says once backend cuda has found that the vectors do not fit the
// device: it runs as cuda-batched, the node vectors on the host.
constexpr const char* kCudaOnHost = "cuda (as cuda-batched)";

// About how much host memory the run's vectors of the model's size take: the average and
// evaluation copies (8); without a resident backend the node models and messages in flight
// (two per node) and a batched backend's gradients (one); with one (resident_vectors > 0: the
// method attaches, keeping that many per node there) cpu-resident's vectors and, where the
// method has node models (pulls_models), the models the engine pulls for the epoch probe
// (per-node accuracies are computed where the models are), cuda-resident's vectors being
// device memory (its own check; backend cuda counts as cuda-resident until the device has
// said the vectors do not fit); a balancing orderer's per-example gradients.
double host_memory_estimate(const RunPlan& plan, int nodes, std::size_t resident_vectors,
                            bool pulls_models) {
  const double vector = plan.model ? static_cast<double>(plan.model->num_params()) * 4.0 : 0.0;
  const bool on_host = plan.backend == "cpu-resident";
  const bool resident = resident_vectors > 0 &&
                        (on_host || plan.backend == "cuda-resident" || plan.backend == "cuda");
  double copies = 8.0;
  if (!resident)
    copies += (plan.backend == "cpu" ? 2.0 : 3.0) * nodes;
  else {
    if (on_host)
      copies += static_cast<double>(resident_vectors) * nodes;
    if (pulls_models && plan.engine.eval_per_epoch)
      copies += nodes;
  }
  double bytes = vector * copies;
  if (plan.order && plan.order->needs_per_example_grads())
    bytes += vector * plan.engine.batch_size * nodes;
  return bytes;
}

void check_host_memory(const Params& root, RunPlan& plan, int nodes, std::size_t resident_vectors,
                       bool pulls_models) {
  plan.memory_estimate_bytes = host_memory_estimate(plan, nodes, resident_vectors, pulls_models);
  if (plan.memory_estimate_bytes <= kMaxMemoryBytes)
    return;
  root.fail("nodes",
            "this run would need about " +
                std::to_string(static_cast<long long>(plan.memory_estimate_bytes / (1 << 20))) +
                " MiB of host memory for " + std::to_string(nodes) + " nodes of a " +
                std::to_string(plan.model ? plan.model->num_params() : 0) +
                "-parameter model; the limit is 16 GiB: use fewer nodes or a smaller "
                "model" +
                (plan.backend == kCudaOnHost
                     ? " (backend cuda: the node vectors did not fit the GPU either)"
                 : resident_vectors > 0 && !plan.backend.starts_with("cuda")
                     ? " (on a GPU, backend cuda keeps the node vectors there where they fit)"
                     : ""));
}

std::string default_name(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

// The name makes the default trace file runs/<name>.h5: it must stay one file name there.
void check_run_name(const Params& root, const std::string& name) {
  if (name.empty() || name.front() == '.' || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    root.fail("name", "expected a name usable as a file name (no '/', not empty, not starting "
                      "with '.'), got '" +
                          name + "'");
  if (name.size() > kLongestRunName)
    root.fail("name", "expected at most " + std::to_string(kLongestRunName) + " characters, got " +
                          std::to_string(name.size()));
}

// Of `keys`, the first the scenario wrote (a default written back has no line), else the
// first: where an error about them all points.
const char* written_key(const Params& p, std::initializer_list<const char*> keys) {
  for (const char* key : keys)
    if (const ParamNode* n = p.node().find(key); n && n->line != 0)
      return key;
  return *keys.begin();
}

void read_stop(const Params& p, EngineConfig& e) {
  e.stop_epochs = p.number("epochs", 0.0, Range::non_negative());
  e.stop_sim_time_s = p.number("sim_time_s", 0.0, Range::seconds());
  e.stop_steps = p.integer("steps", 0, Range::non_negative());
  e.divergence_loss = p.number("divergence_loss", 1e3, Range::positive());
  if (e.stop_epochs <= 0 && e.stop_sim_time_s <= 0 && e.stop_steps <= 0)
    p.fail(written_key(p, {"epochs", "steps", "sim_time_s"}),
           "no stop rule: set at least one of stop.epochs, stop.sim_time_s, stop.steps to a "
           "value > 0");
}

void read_eval(const Params& p, EngineConfig& e, const Model* model) {
  // One rule; with none given, 20 evaluations per epoch (the same count at any node count,
  // so stability measures see as many points at n = 8 as at n = 256). 0 = rule off.
  const bool given = p.has("every_s") || p.has("every_epochs") || p.has("every_updates");
  e.eval_every_s = p.number("every_s", 0.0, Range::seconds());
  e.eval_every_epochs = p.number("every_epochs", given ? 0.0 : 0.05, Range::non_negative());
  e.eval_every_updates = p.integer("every_updates", 0, Range::non_negative());
  // A shorter interval rounds to no time at all on the nanosecond clock (the run would never
  // leave its evaluations) or asks for more evaluations than there are events.
  constexpr double kShortest = 1e-6;
  for (const auto& [key, every] :
       {std::pair{"every_s", e.eval_every_s}, std::pair{"every_epochs", e.eval_every_epochs}})
    if (every > 0 && every < kShortest)
      p.fail(key, "expected 0 (off) or at least 1e-6, got " + format_number(every));
  const int rules = (e.eval_every_s > 0) + (e.eval_every_epochs > 0) + (e.eval_every_updates > 0);
  if (rules != 1)
    p.fail(written_key(p, {"every_epochs", "every_s", "every_updates"}),
           std::string(rules == 0 ? "no evaluation rule" : "more than one evaluation rule") +
               ": set exactly one of eval.every_s, eval.every_epochs, eval.every_updates to a "
               "value > 0 (the others 0 or absent)");
  e.eval_test_samples = p.integer("test_samples", 0, Range::non_negative());
  e.eval_per_node = p.flag("per_node", false);
  constexpr std::int64_t kPerNodeSamples = 1000;
  e.eval_per_node_samples = p.integer("per_node_samples", kPerNodeSamples, Range::positive());
  // Without per_node the key has no effect: a value other than the default is a setting the
  // user expects to matter. (The default itself is accepted: resolved scenarios write it.)
  if (!e.eval_per_node && e.eval_per_node_samples != kPerNodeSamples)
    p.fail("per_node_samples", "applies to per-node evaluations only: set eval.per_node: true, "
                               "or remove eval.per_node_samples (or leave it at " +
                                   std::to_string(kPerNodeSamples) + ")");
  e.eval_per_epoch = p.flag("per_epoch", false);
  e.eval_herding_bound = p.flag("herding_bound", false);
  if (e.eval_herding_bound && !e.eval_per_epoch)
    p.fail("herding_bound", "the herding bound is a per-epoch measure: set eval.per_epoch: true");
  if (!model) {
    const std::pair<const char*, bool> model_keys[] = {{"test_samples", e.eval_test_samples > 0},
                                                       {"per_node", e.eval_per_node},
                                                       {"per_epoch", e.eval_per_epoch}};
    for (const auto& [key, set] : model_keys)
      if (set)
        p.fail(key, "a timing-only run (model.kind: none) has no model to evaluate: remove "
                    "eval." +
                        std::string(key));
    return;
  }
  if (e.eval_herding_bound && !model->supports_per_example_grads())
    p.fail("herding_bound",
           "needs per-example gradients, which model " + model->describe() + " does not compute");
}

// A timing-only run (model.kind: none) has no data: `data:` says only how many examples one
// node-step uses and one epoch counts, so that stop.epochs and eval.every_epochs keep their
// meaning. The largest run this serves is the 1,000,000-node one.
TimingOnly read_timing_only(const Params& model, const Params& data) {
  TimingOnly t;
  t.wire_params = static_cast<std::size_t>(
      model.integer("num_params", 100000, Range::between(1, std::int64_t{1} << 34)));
  t.train_size = data.integer("train_samples", 60000, Range::between(1, std::int64_t{1} << 40));
  for (const char* key :
       {"dataset", "path", "labels", "test_samples", "synthetic", "partition", "order"})
    if (data.has(key))
      data.fail(key, "a timing-only run (model.kind: none) has no data: only data.batch_size and "
                     "data.train_samples (examples per epoch, default 60000) apply");
  return t;
}

// Top-level keys first: a misspelled section (stopp:) would otherwise surface as the error
// of the section it was meant to be ("no stop rule") before reject_unused could name it;
// and a sweep file given as a scenario is told so.
void check_sections(const Params& root, const ParamNode& tree) {
  static const std::vector<std::string> sections = {"name",   "label", "seed",     "nodes",
                                                    "data",   "model", "topology", "algorithm",
                                                    "system", "stop",  "eval",     "output"};
  if (tree.find("base") && (tree.find("grid") || tree.find("points")))
    throw ConfigError(root.file() +
                      ": this is a sweep file (it has base: and grid:/points:); "
                      "run it with dtsim sweep " +
                      root.file());
  root.reject_unknown(sections);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

RunPlan plan_from_tree(std::shared_ptr<ParamNode> tree, const std::string& scenario_path,
                       const std::vector<std::string>& overrides, PlanUse use) {
  const auto started = std::chrono::steady_clock::now();
  for (const std::string& o : overrides)
    apply_override(*tree, o);
  const Params root(tree, scenario_path);
  check_sections(root, *tree);

  RunPlan plan;
  plan.use = use;
  plan.source_file = scenario_path;
  const bool name_written = root.has("name"); // a file's own stem (".scratch") is its business
  plan.name = root.text("name", default_name(scenario_path));
  if (name_written)
    check_run_name(root, plan.name);
  plan.seed = static_cast<std::uint64_t>(root.integer("seed", 1, Range::non_negative()));
  const int nodes = static_cast<int>(root.integer("nodes", 16, Range::between(1, kMaxNodes)));

  const Params data = root.child("data");
  plan.engine.batch_size =
      static_cast<int>(data.integer("batch_size", 32, Range::between(1, 65536)));
  const Params model = root.child("model");
  if (model.has("kind") && model.text("kind", "mlp") == "none") {
    plan.timing = read_timing_only(model, data);
  } else {
    plan.data = load_dataset(data, plan.seed);
    if (static_cast<std::size_t>(nodes) > plan.data->train.size())
      root.fail("nodes", "expected at most one node per training example (" +
                             std::to_string(plan.data->train.size()) + " here), got " +
                             std::to_string(nodes));
    plan.partition = make_partition(data.child("partition"), plan.data->train.labels,
                                    plan.data->train.num_classes, nodes, plan.seed);
    plan.model = make_model(model, plan.data->train.shape, plan.data->train.num_classes);
    plan.order =
        make_order(data.child("order"), OrderSetup{nodes, plan.engine.batch_size, plan.seed,
                                                   &plan.partition, plan.model.get()});
    // Checked here, in key order; a device backend is made last, once everything else holds.
    make_gradient_backend(model, *plan.model, plan.data->train, plan.engine.batch_size, nodes,
                          *plan.order, BackendUse::check);
    plan.backend = model.text("backend", "cpu");
  }
  // The evaluations first: which of them read node models on the host counts below.
  read_eval(root.child("eval"), plan.engine, plan.model.get());
  // Before anything of the nodes' size is made, as if a resident backend's method attached
  // with the fewest vectors and read no node model on the host; again once the method has
  // said what it keeps and whether it has node models.
  check_host_memory(root, plan, nodes, kLeastResidentVectors, false);

  plan.topology.emplace(make_topology(root.child("topology"), nodes, plan.seed));
  plan.mixing = make_mixing_schedule(root.child("topology"), *plan.topology, plan.seed);
  // The stop rule first: learning-rate schedules need the run's budget in epochs.
  read_stop(root.child("stop"), plan.engine);

  const Params alg = root.child("algorithm");
  // No algorithm key depends on the dimension, so a checking plan's resolved scenario is the
  // running plan's.
  AlgorithmSetup setup{nodes, use == PlanUse::run && plan.model ? plan.model->num_params() : 0,
                       &*plan.topology};
  setup.mixing = plan.mixing.get();
  setup.batch_size = plan.engine.batch_size;
  const auto train_size =
      static_cast<double>(plan.timing ? plan.timing->train_size : plan.data->train.size());
  setup.budget_epochs = plan.engine.stop_epochs > 0 ? plan.engine.stop_epochs
                        : plan.engine.stop_steps > 0
                            ? static_cast<double>(plan.engine.stop_steps) * plan.engine.batch_size *
                                  nodes / train_size
                            : 0.0;
  if (plan.timing) {
    setup.timing_wire_params = plan.timing->wire_params;
    // The examples split as evenly as they go (the first train_size % n nodes get one more).
    const std::int64_t share = plan.timing->train_size / nodes;
    const std::int64_t extra = plan.timing->train_size % nodes;
    for (int i = 0; i < nodes; ++i)
      setup.node_samples.push_back(share + (i < extra ? 1 : 0));
  } else {
    for (const auto& idx : plan.partition.node_indices)
      setup.node_samples.push_back(static_cast<std::int64_t>(idx.size()));
  }
  plan.algorithm = algorithm_registry().make(alg, "name", "dsgd", setup);
  // What the method keeps per node in a resident backend (0: it does not attach).
  const std::size_t resident_vectors =
      plan.algorithm->can_attach_resident() ? plan.algorithm->resident_vectors_per_node() : 0;
  check_host_memory(root, plan, nodes, resident_vectors, plan.algorithm->has_node_models());
  // What tables and plots call this configuration (sweeps set it per point, e.g. "DSGDm-N
  // async" where two points share an algorithm name).
  plan.label = root.text("label", alg.text("name", "dsgd"));

  const Params system = root.child("system");
  plan.compute = std::make_unique<ComputeTimeModel>(system.child("compute"), nodes, plan.seed);
  plan.network =
      std::make_unique<NetworkModel>(system.child("network"), nodes + 1, plan.seed,
                                     plan.order && plan.order->separate_coordinator() ? 1 : 0);

  if (plan.data && static_cast<std::size_t>(plan.engine.eval_test_samples) > plan.data->test.size())
    root.child("eval").fail("test_samples", "expected at most the test split's " +
                                                std::to_string(plan.data->test.size()) +
                                                " examples (0 = all), got " +
                                                std::to_string(plan.engine.eval_test_samples));
  plan.engine.seed = plan.seed;

  const Params out = root.child("output");
  plan.output_path = out.file_path("path", "runs/" + plan.name + ".h5");
  if (plan.output_path.empty())
    out.fail("path", "expected a trace file name, got ''");
  if (std::error_code ec; std::filesystem::is_directory(plan.output_path, ec))
    out.fail("path", plan.output_path + " is a folder; expected a trace file name");
  plan.events = out.choice("events", "summary", {"none", "summary", "full"});
  plan.engine.record_events = plan.events == "full";

  root.reject_unused();
  plan.resolved_yaml = to_yaml(*tree);
  if (use == PlanUse::run && plan.model) {
    const auto backend_started = std::chrono::steady_clock::now();
    plan.batched = make_gradient_backend(model, *plan.model, plan.data->train,
                                         plan.engine.batch_size, plan.topology->size(), *plan.order,
                                         BackendUse::run, resident_vectors);
    plan.backend_setup_wall_seconds = seconds_since(backend_started);
    if (plan.backend == "cuda" && resident_vectors > 0 && !plan.batched->resident()) {
      // The vectors did not fit the device: they live on the host, as with cuda-batched.
      plan.backend = kCudaOnHost;
      check_host_memory(root, plan, nodes, resident_vectors, plan.algorithm->has_node_models());
    }
  } else if (use == PlanUse::check_here && plan.model)
    make_gradient_backend(model, *plan.model, plan.data->train, plan.engine.batch_size,
                          plan.topology->size(), *plan.order, BackendUse::check_device);
  plan.setup_wall_seconds = seconds_since(started);
  return plan;
}

} // namespace

RunPlan plan_run(const std::string& scenario_path, const std::vector<std::string>& overrides,
                 PlanUse use) {
  return plan_from_tree(parse_yaml_file(scenario_path), scenario_path, overrides, use);
}

RunPlan plan_run_text(const std::string& yaml, const std::string& name,
                      const std::vector<std::string>& overrides, PlanUse use) {
  return plan_from_tree(parse_yaml_text(yaml, name), name, overrides, use);
}

std::string RunPlan::describe_model() const {
  if (timing)
    return "none (timing-only: messages of " + std::to_string(timing->wire_params) +
           " float32 parameters, no gradients)";
  return model->describe();
}

RunResult execute_plan(RunPlan& plan, TraceSink& sink, int threads) {
  DTSIM_ASSERT(plan.use == PlanUse::run, "a plan made for checking cannot run");
  SimulationParts parts{plan.data ? &plan.data->train : nullptr,
                        plan.data ? &plan.data->test : nullptr,
                        &plan.partition,
                        plan.model.get(),
                        &*plan.topology,
                        plan.compute.get(),
                        plan.network.get(),
                        plan.algorithm.get(),
                        &sink,
                        plan.order.get(),
                        plan.timing ? &*plan.timing : nullptr,
                        plan.batched.get()};
  Simulator sim(parts, plan.engine);
  RunHeader header;
  header.name = plan.name;
  header.scenario_yaml = plan.resolved_yaml;
  header.seed = plan.seed;
  header.text_attributes = {{"dtsim_version", build_info().version},
                            {"build_commit", build_info().commit},
                            {"build_compiler", build_info().compiler},
                            {"build_march", build_info().march},
                            {"build_isa", build_info().isa},
                            {"scenario_file", plan.source_file},
                            {"model", plan.describe_model()},
                            {"algorithm", plan.algorithm->describe()},
                            {"order", plan.order ? plan.order->describe() : "none (timing-only)"},
                            {"topology", plan.topology->name()},
                            {"gradient_backend", plan.batched  ? plan.batched->describe()
                                                 : plan.timing ? "none (timing-only)"
                                                               : "cpu"}};
  header.text_attributes.insert(header.text_attributes.end(), plan.trace_attributes.begin(),
                                plan.trace_attributes.end());
  header.number_attributes = {{"threads", threads},
                              {"batch_size", plan.engine.batch_size},
                              {"memory_estimate_bytes", plan.memory_estimate_bytes},
                              {"setup_wall_seconds", plan.setup_wall_seconds},
                              {"backend_setup_wall_seconds", plan.backend_setup_wall_seconds}};
  return sim.run(std::move(header));
}

} // namespace dtsim
