// hush_bt_dump TRACE_DIR: reads a CTF trace with libbabeltrace2 (ctf.fs -> utils.muxer -> a simple
// sink) and prints every message the runtime tests care about in an unambiguous line format, so
// that tests never have to parse babeltrace2's human-oriented text output:
//
//   E <stream> <vtid> <cycles> <ns> <name> <emf-uri> [<field>=<kind>:<value>]...   one event
//   D <stream> <count> <begin-cycles> <end-cycles>                          discarded events
//   L <stream> <count>                                                      discarded packets
//   B <stream> <vtid> <cycles>                                              packet beginning
//   F <stream> <cycles>                                                     packet end
//   S <stream> <name>                                                       stream beginning
//
// Columns are separated by one TAB. Field kinds: i signed integer, u unsigned integer, e unsigned
// enumeration, n signed enumeration, f single real (%.9g), d double real (%.17g), s string (hex of
// its bytes), a array/sequence of unsigned integers (hex of the bytes), ? other. A count of -1
// means "not available". Missing clock snapshots print as -1.
//
// Exit status: 0 when the whole trace was read, 2 on a usage error, 1 on any babeltrace2 error
// (its error causes are printed on stderr).
//
// Deliberately built without sanitizers (tests/runtime/CMakeLists.txt): libbabeltrace2 and GLib
// are not instrumented and keep process-lifetime allocations.
#include <babeltrace2/babeltrace.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

std::string Hex(const void* data, std::size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

std::string FieldValue(const bt_field* f) {
  char buf[64];
  const bt_field_class_type t = bt_field_get_class_type(f);
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_ENUMERATION)) {
    std::snprintf(buf, sizeof buf, "e:%" PRIu64, bt_field_integer_unsigned_get_value(f));
    return buf;
  }
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_ENUMERATION)) {
    std::snprintf(buf, sizeof buf, "n:%" PRId64, bt_field_integer_signed_get_value(f));
    return buf;
  }
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
    std::snprintf(buf, sizeof buf, "u:%" PRIu64, bt_field_integer_unsigned_get_value(f));
    return buf;
  }
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
    std::snprintf(buf, sizeof buf, "i:%" PRId64, bt_field_integer_signed_get_value(f));
    return buf;
  }
  if (t == BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL) {
    std::snprintf(buf, sizeof buf, "f:%.9g",
                  static_cast<double>(bt_field_real_single_precision_get_value(f)));
    return buf;
  }
  if (t == BT_FIELD_CLASS_TYPE_DOUBLE_PRECISION_REAL) {
    std::snprintf(buf, sizeof buf, "d:%.17g", bt_field_real_double_precision_get_value(f));
    return buf;
  }
  if (t == BT_FIELD_CLASS_TYPE_STRING) {
    return "s:" + Hex(bt_field_string_get_value(f), bt_field_string_get_length(f));
  }
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY)) {
    std::string bytes;
    const std::uint64_t n = bt_field_array_get_length(f);
    for (std::uint64_t i = 0; i < n; ++i) {
      const bt_field* e = bt_field_array_borrow_element_field_by_index_const(f, i);
      bytes += static_cast<char>(bt_field_integer_unsigned_get_value(e) & 0xff);
    }
    return "a:" + Hex(bytes.data(), bytes.size());
  }
  return "?:";
}

std::int64_t Vtid(const bt_packet* packet) {
  if (packet == nullptr) return -1;
  const bt_field* ctx = bt_packet_borrow_context_field_const(packet);
  if (ctx == nullptr) return -1;
  const bt_field* vtid = bt_field_structure_borrow_member_field_by_name_const(ctx, "vtid");
  if (vtid == nullptr) return -1;
  return static_cast<std::int64_t>(bt_field_integer_unsigned_get_value(vtid));
}

std::uint64_t StreamId(const bt_stream* s) { return bt_stream_get_id(s); }

void PrintMessage(const bt_message* m) {
  switch (bt_message_get_type(m)) {
    case BT_MESSAGE_TYPE_STREAM_BEGINNING: {
      const bt_stream* s = bt_message_stream_beginning_borrow_stream_const(m);
      const char* name = bt_stream_get_name(s);
      std::printf("S\t%" PRIu64 "\t%s\n", StreamId(s), name ? name : "");
      break;
    }
    case BT_MESSAGE_TYPE_PACKET_BEGINNING: {
      const bt_packet* p = bt_message_packet_beginning_borrow_packet_const(m);
      const bt_stream* s = bt_packet_borrow_stream_const(p);
      const bt_clock_snapshot* cs =
          bt_message_packet_beginning_borrow_default_clock_snapshot_const(m);
      std::printf("B\t%" PRIu64 "\t%" PRId64 "\t%" PRIu64 "\n", StreamId(s), Vtid(p),
                  cs ? bt_clock_snapshot_get_value(cs) : UINT64_MAX);
      break;
    }
    case BT_MESSAGE_TYPE_PACKET_END: {
      const bt_packet* p = bt_message_packet_end_borrow_packet_const(m);
      const bt_stream* s = bt_packet_borrow_stream_const(p);
      const bt_clock_snapshot* cs = bt_message_packet_end_borrow_default_clock_snapshot_const(m);
      std::printf("F\t%" PRIu64 "\t%" PRIu64 "\n", StreamId(s),
                  cs ? bt_clock_snapshot_get_value(cs) : UINT64_MAX);
      break;
    }
    case BT_MESSAGE_TYPE_EVENT: {
      const bt_event* e = bt_message_event_borrow_event_const(m);
      const bt_event_class* ec = bt_event_borrow_class_const(e);
      const bt_stream* s = bt_event_borrow_stream_const(e);
      const bt_clock_snapshot* cs = bt_message_event_borrow_default_clock_snapshot_const(m);
      const char* emf = bt_event_class_get_emf_uri(ec);
      std::int64_t ns = -1;
      if (cs != nullptr) bt_clock_snapshot_get_ns_from_origin(cs, &ns);
      std::string line = "E\t" + std::to_string(StreamId(s)) + "\t" +
                         std::to_string(Vtid(bt_event_borrow_packet_const(e))) + "\t" +
                         std::to_string(cs ? bt_clock_snapshot_get_value(cs) : UINT64_MAX) + "\t" +
                         std::to_string(ns) + "\t" + bt_event_class_get_name(ec) + "\t" +
                         (emf ? emf : "");
      if (const bt_field* payload = bt_event_borrow_payload_field_const(e)) {
        const bt_field_class* fc = bt_field_borrow_class_const(payload);
        const std::uint64_t n = bt_field_class_structure_get_member_count(fc);
        for (std::uint64_t i = 0; i < n; ++i) {
          const bt_field_class_structure_member* member =
              bt_field_class_structure_borrow_member_by_index_const(fc, i);
          const char* name = bt_field_class_structure_member_get_name(member);
          // CTF sequence length fields ("_x_length") are not part of the payload in bt2.
          line += "\t";
          line += name;
          line += "=";
          line += FieldValue(bt_field_structure_borrow_member_field_by_index_const(payload, i));
        }
      }
      std::puts(line.c_str());
      break;
    }
    case BT_MESSAGE_TYPE_DISCARDED_EVENTS: {
      const bt_stream* s = bt_message_discarded_events_borrow_stream_const(m);
      std::uint64_t count = 0;
      const bool have =
          bt_message_discarded_events_get_count(m, &count) == BT_PROPERTY_AVAILABILITY_AVAILABLE;
      std::uint64_t b = UINT64_MAX, en = UINT64_MAX;
      const bt_stream_class* sc = bt_stream_borrow_class_const(s);
      if (bt_stream_class_discarded_events_have_default_clock_snapshots(sc)) {
        b = bt_clock_snapshot_get_value(
            bt_message_discarded_events_borrow_beginning_default_clock_snapshot_const(m));
        en = bt_clock_snapshot_get_value(
            bt_message_discarded_events_borrow_end_default_clock_snapshot_const(m));
      }
      std::printf("D\t%" PRIu64 "\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\n", StreamId(s),
                  have ? static_cast<std::int64_t>(count) : -1, static_cast<std::int64_t>(b),
                  static_cast<std::int64_t>(en));
      break;
    }
    case BT_MESSAGE_TYPE_DISCARDED_PACKETS: {
      const bt_stream* s = bt_message_discarded_packets_borrow_stream_const(m);
      std::uint64_t count = 0;
      const bool have =
          bt_message_discarded_packets_get_count(m, &count) == BT_PROPERTY_AVAILABILITY_AVAILABLE;
      std::printf("L\t%" PRIu64 "\t%" PRId64 "\n", StreamId(s),
                  have ? static_cast<std::int64_t>(count) : -1);
      break;
    }
    default:
      break;
  }
}

bt_graph_simple_sink_component_consume_func_status Consume(bt_message_iterator* it, void*) {
  bt_message_array_const msgs;
  std::uint64_t count = 0;
  switch (bt_message_iterator_next(it, &msgs, &count)) {
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
      break;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
    default:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    PrintMessage(msgs[i]);
    bt_message_put_ref(msgs[i]);
  }
  return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

int Fail(const char* what) {
  std::fflush(stdout);
  std::fprintf(stderr, "hush_bt_dump: %s\n", what);
  if (const bt_error* err = bt_current_thread_take_error()) {
    const std::uint64_t n = bt_error_get_cause_count(err);
    for (std::uint64_t i = 0; i < n; ++i) {
      const bt_error_cause* c = bt_error_borrow_cause_by_index(err, i);
      std::fprintf(stderr, "  cause: %s\n", bt_error_cause_get_message(c));
    }
    bt_error_release(err);
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hush_bt_dump TRACE_DIR\n");
    return 2;
  }
  const bt_plugin* ctf = nullptr;
  const bt_plugin* utils = nullptr;
  if (bt_plugin_find("ctf", BT_FALSE, BT_FALSE, BT_TRUE, BT_TRUE, BT_TRUE, &ctf) !=
          BT_PLUGIN_FIND_STATUS_OK ||
      bt_plugin_find("utils", BT_FALSE, BT_FALSE, BT_TRUE, BT_TRUE, BT_TRUE, &utils) !=
          BT_PLUGIN_FIND_STATUS_OK) {
    return Fail("cannot load the ctf and utils plugins");
  }
  bt_graph* graph = bt_graph_create(0);
  bt_value* params = bt_value_map_create();
  bt_value* inputs = nullptr;
  bt_value_map_insert_empty_array_entry(params, "inputs", &inputs);
  bt_value_array_append_string_element(inputs, argv[1]);

  const bt_component_source* src = nullptr;
  if (bt_graph_add_source_component(
          graph, bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs"), "src", params,
          BT_LOGGING_LEVEL_WARNING, &src) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
    return Fail("cannot open the trace");
  }
  const bt_component_filter* mux = nullptr;
  if (bt_graph_add_filter_component(
          graph, bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer"), "mux",
          nullptr, BT_LOGGING_LEVEL_WARNING, &mux) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
    return Fail("cannot create the muxer");
  }
  const bt_component_sink* sink = nullptr;
  if (bt_graph_add_simple_sink_component(graph, "sink", nullptr, Consume, nullptr, nullptr,
                                         &sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
    return Fail("cannot create the sink");
  }
  const std::uint64_t outs = bt_component_source_get_output_port_count(src);
  for (std::uint64_t i = 0; i < outs; ++i) {
    const bt_port_output* out = bt_component_source_borrow_output_port_by_index_const(src, i);
    const bt_port_input* in = bt_component_filter_borrow_input_port_by_index_const(mux, i);
    if (in == nullptr ||
        bt_graph_connect_ports(graph, out, in, nullptr) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
      return Fail("cannot connect a stream to the muxer");
    }
  }
  if (bt_graph_connect_ports(graph, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
                             bt_component_sink_borrow_input_port_by_index_const(sink, 0),
                             nullptr) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
    return Fail("cannot connect the muxer to the sink");
  }
  for (;;) {
    const bt_graph_run_status st = bt_graph_run(graph);
    if (st == BT_GRAPH_RUN_STATUS_OK) break;
    if (st == BT_GRAPH_RUN_STATUS_AGAIN) continue;
    return Fail("reading the trace failed");
  }
  std::fflush(stdout);
  bt_graph_put_ref(graph);
  bt_value_put_ref(params);
  bt_plugin_put_ref(ctf);
  bt_plugin_put_ref(utils);
  return 0;
}
