// A ROS 2 node's middleware without ROS, for the tests: Fast DDS set up as rmw_fastrtps sets up
// a node, publishing or subscribing ROS 2 topics with their serialised CDR bytes.
//
// Built against Debian's libfastrtps-dev (Fast DDS 2.9) by tests/peers/fastdds (a pytest
// fixture runs g++). It shares no code with hyperframes. What it copies from rmw_fastrtps_cpp
// (Humble, rmw_fastrtps_shared_cpp/src/participant.cpp and qos.cpp):
//   * DDS names after the ros2/design article: topic "rt/<topic>", type "<pkg>::msg::dds_::<T>_";
//   * ROS_LOCALHOST_ONLY=1's participant: builtin transports off, a UDPv4 transport whose
//     interface whitelist is 127.0.0.1, and the shared-memory transport;
//   * no type information or type object (rmw_fastrtps registers neither), XCDR1 payloads
//     (Fast DDS 2.9's default data representation), data sharing off, asynchronous
//     publication, PREALLOCATED_WITH_REALLOC history memory;
//   * QoS: ROS 2's default profile (reliable, volatile, keep last 10) unless told otherwise.
// The type is a hand-written TopicDataType that carries the message's CDR bytes as they are
// (encapsulation header included), as rmw's generic type support would produce them: the bytes
// a ROS 2 node sends and receives.
//
//   peer pub --domain D --topic /a=pkg/msg/T ... --data FILE [--subscribers N] [--rate HZ]
//            [--best-effort] [--depth N] [--match-timeout S] [--hold-s S] [--wait-go]
//   peer sub --domain D --topic /a=pkg/msg/T ... --out FILE [--count N] [--start-s S]
//            [--idle-s S] [--best-effort] [--depth N]
//
// Records (FILE and --out): <u16 topic length><u32 data length><i64 ns><topic><CDR bytes>,
// little endian; in --data the i64 is ignored, in --out it is the monotonic receive time.
// pub prints "ready" once its writers exist, "matched" once every writer has N subscribers, "sent <n>" and "acked <0|1>";
// with --wait-go it sends only once a line arrives on stdin after "matched" (a writer matching a
// reader is one side: the reader may not have matched the writer yet, and drops what comes first);
// sub prints "ready" once its readers exist, "matched <topic>" per publication matched,
// "incompatible <topic> <policy id>" for a requested-incompatible QoS, "lost <topic> <n>",
// then "got <n>".
#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/domain/qos/DomainParticipantQos.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/DataWriterListener.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/shared_mem/SharedMemTransportDescriptor.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::InstanceHandle_t;
using eprosima::fastrtps::rtps::SerializedPayload_t;

namespace {

struct Raw {
    std::vector<uint8_t> bytes;
};

// The message's CDR bytes as the payload: 4-byte encapsulation header, then the body.
class RawType : public TopicDataType {
  public:
    explicit RawType(const std::string& name) {
        setName(name.c_str());
        m_typeSize = 4096;  // a first allocation; payloads grow (PREALLOCATED_WITH_REALLOC)
        m_isGetKeyDefined = false;
    }
    bool serialize(void* data, SerializedPayload_t* payload) override {
        auto* raw = static_cast<Raw*>(data);
        if (raw->bytes.size() < 4 || raw->bytes.size() > payload->max_size) return false;
        payload->encapsulation = raw->bytes[1] == 1 ? CDR_LE : CDR_BE;
        std::memcpy(payload->data, raw->bytes.data(), raw->bytes.size());
        payload->length = static_cast<uint32_t>(raw->bytes.size());
        return true;
    }
    bool deserialize(SerializedPayload_t* payload, void* data) override {
        auto* raw = static_cast<Raw*>(data);
        raw->bytes.assign(payload->data, payload->data + payload->length);
        return true;
    }
    std::function<uint32_t()> getSerializedSizeProvider(void* data) override {
        auto* raw = static_cast<Raw*>(data);
        return [raw]() { return static_cast<uint32_t>(raw->bytes.size()); };
    }
    void* createData() override { return new Raw(); }
    void deleteData(void* data) override { delete static_cast<Raw*>(data); }
    bool getKey(void*, InstanceHandle_t*, bool) override { return false; }
};

std::string dds_type(const std::string& ros_type) {  // pkg/msg/T -> pkg::msg::dds_::T_
    auto a = ros_type.find('/');
    auto b = ros_type.rfind('/');
    if (a == std::string::npos || a == b) throw std::runtime_error("bad type " + ros_type);
    return ros_type.substr(0, a) + "::" + ros_type.substr(a + 1, b - a - 1) + "::dds_::" +
           ros_type.substr(b + 1) + "_";
}

struct Record {
    std::string topic;
    std::vector<uint8_t> data;
};

std::vector<Record> read_records(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::vector<Record> out;
    for (;;) {
        uint16_t n_topic;
        uint32_t n_data;
        int64_t ns;
        if (!in.read(reinterpret_cast<char*>(&n_topic), 2)) break;
        in.read(reinterpret_cast<char*>(&n_data), 4);
        in.read(reinterpret_cast<char*>(&ns), 8);
        Record r;
        r.topic.resize(n_topic);
        in.read(r.topic.data(), n_topic);
        r.data.resize(n_data);
        in.read(reinterpret_cast<char*>(r.data.data()), n_data);
        if (!in) throw std::runtime_error("truncated record in " + path);
        out.push_back(std::move(r));
    }
    return out;
}

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::mutex g_print;
void say(const std::string& line) {
    std::lock_guard<std::mutex> lock(g_print);
    std::cout << line << std::endl;
}

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

struct Options {
    std::string mode;
    int domain = 0;
    std::vector<std::pair<std::string, std::string>> topics;  // topic, ROS 2 type
    std::string data, out;
    int subscribers = 1;
    double rate = 0, match_timeout = 20, hold_s = 0, start_s = 20, idle_s = 3;
    long count = 0;
    bool best_effort = false, wait_go = false;
    int depth = 10;
};

Options parse(int argc, char** argv) {
    Options o;
    if (argc < 2) throw std::runtime_error("usage: peer pub|sub ...");
    o.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--domain") o.domain = std::stoi(next());
        else if (a == "--topic") {
            std::string v = next();
            auto eq = v.find('=');
            if (eq == std::string::npos) throw std::runtime_error("--topic TOPIC=TYPE");
            o.topics.emplace_back(v.substr(0, eq), v.substr(eq + 1));
        } else if (a == "--data") o.data = next();
        else if (a == "--out") o.out = next();
        else if (a == "--subscribers") o.subscribers = std::stoi(next());
        else if (a == "--rate") o.rate = std::stod(next());
        else if (a == "--match-timeout") o.match_timeout = std::stod(next());
        else if (a == "--hold-s") o.hold_s = std::stod(next());
        else if (a == "--count") o.count = std::stol(next());
        else if (a == "--start-s") o.start_s = std::stod(next());
        else if (a == "--idle-s") o.idle_s = std::stod(next());
        else if (a == "--best-effort") o.best_effort = true;
        else if (a == "--wait-go") o.wait_go = true;
        else if (a == "--depth") o.depth = std::stoi(next());
        else throw std::runtime_error("unknown option " + a);
    }
    if (o.topics.empty()) throw std::runtime_error("give at least one --topic");
    return o;
}

// rmw_fastrtps_shared_cpp's participant with ROS_LOCALHOST_ONLY=1.
DomainParticipant* make_participant(int domain) {
    DomainParticipantQos qos = PARTICIPANT_QOS_DEFAULT;
    qos.name("hyperframes_fastdds_peer");
    qos.transport().use_builtin_transports = false;
    auto udp = std::make_shared<eprosima::fastdds::rtps::UDPv4TransportDescriptor>();
    udp->interfaceWhiteList.emplace_back("127.0.0.1");
    qos.transport().user_transports.push_back(udp);
    auto shm = std::make_shared<eprosima::fastdds::rtps::SharedMemTransportDescriptor>();
    qos.transport().user_transports.push_back(shm);
    const char* enclave = "enclave=/;";
    qos.user_data().setValue(std::vector<eprosima::fastrtps::rtps::octet>(
        enclave, enclave + std::strlen(enclave)));
    auto* p = DomainParticipantFactory::get_instance()->create_participant(domain, qos);
    if (p == nullptr) throw std::runtime_error("cannot create the participant");
    return p;
}

Topic* make_topic(DomainParticipant* p, const std::string& topic, const std::string& type) {
    std::string name = dds_type(type);
    if (p->find_type(name).empty()) {
        TypeSupport ts(new RawType(name));
        ts->auto_fill_type_information(false);
        ts->auto_fill_type_object(false);
        if (ts.register_type(p) != ReturnCode_t::RETCODE_OK)
            throw std::runtime_error("cannot register " + name);
    }
    Topic* t = p->create_topic("rt" + topic, name, TOPIC_QOS_DEFAULT);
    if (t == nullptr) throw std::runtime_error("cannot create topic " + topic);
    return t;
}

class WriterListener : public DataWriterListener {
  public:
    std::string topic;
    void on_publication_matched(DataWriter*, const PublicationMatchedStatus& s) override {
        say("publication_matched " + topic + " " + std::to_string(s.current_count));
    }
    void on_offered_incompatible_qos(DataWriter*, const OfferedIncompatibleQosStatus& s) override {
        say("incompatible " + topic + " " + std::to_string(s.last_policy_id));
    }
};

int run_pub(const Options& o) {
    auto records = read_records(o.data);
    DomainParticipant* p = make_participant(o.domain);
    Publisher* pub = p->create_publisher(PUBLISHER_QOS_DEFAULT);
    std::map<std::string, DataWriter*> writers;
    std::vector<std::unique_ptr<WriterListener>> listeners;
    for (auto& [topic, type] : o.topics) {
        DataWriterQos qos = DATAWRITER_QOS_DEFAULT;
        qos.reliability().kind = o.best_effort ? BEST_EFFORT_RELIABILITY_QOS : RELIABLE_RELIABILITY_QOS;
        qos.durability().kind = VOLATILE_DURABILITY_QOS;
        qos.history().kind = KEEP_LAST_HISTORY_QOS;
        qos.history().depth = o.depth;
        qos.publish_mode().kind = ASYNCHRONOUS_PUBLISH_MODE;
        qos.endpoint().history_memory_policy =
            eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
        qos.data_sharing().off();
        auto l = std::make_unique<WriterListener>();
        l->topic = topic;
        DataWriter* w = pub->create_datawriter(make_topic(p, topic, type), qos, l.get());
        if (w == nullptr) throw std::runtime_error("cannot create a writer for " + topic);
        writers[topic] = w;
        listeners.push_back(std::move(l));
    }
    say("ready");
    auto deadline = now_ns() + static_cast<int64_t>(o.match_timeout * 1e9);
    for (;;) {
        bool all = true;
        for (auto& [topic, w] : writers) {
            PublicationMatchedStatus s;
            w->get_publication_matched_status(s);
            all = all && s.current_count >= o.subscribers;
        }
        if (all) break;
        if (now_ns() > deadline || g_stop) {
            say("unmatched");
            return 3;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    say("matched");
    if (o.wait_go) {
        std::string go;
        if (!std::getline(std::cin, go)) return 3;
    }
    long sent = 0;
    int64_t start = now_ns();
    for (auto& r : records) {
        if (g_stop) break;
        auto it = writers.find(r.topic);
        if (it == writers.end()) throw std::runtime_error("no --topic for record topic " + r.topic);
        if (o.rate > 0) {
            int64_t due = start + static_cast<int64_t>(sent * 1e9 / o.rate);
            int64_t wait = due - now_ns();
            if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
        }
        Raw raw{r.data};
        if (!it->second->write(&raw)) say("write_failed " + r.topic);
        else ++sent;
    }
    say("sent " + std::to_string(sent));
    bool acked = true;
    for (auto& [topic, w] : writers)
        acked = w->wait_for_acknowledgments(eprosima::fastrtps::Duration_t(10, 0)) ==
                    ReturnCode_t::RETCODE_OK && acked;
    say(std::string("acked ") + (acked ? "1" : "0"));
    auto hold_until = now_ns() + static_cast<int64_t>(o.hold_s * 1e9);
    while (!g_stop && now_ns() < hold_until)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    p->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(p);
    return 0;
}

class ReaderListener : public DataReaderListener {
  public:
    std::string topic;
    std::ofstream* out = nullptr;
    std::mutex* out_lock = nullptr;
    std::atomic<long>* got = nullptr;
    std::atomic<int64_t>* last = nullptr;
    void on_data_available(DataReader* reader) override {
        Raw raw;
        SampleInfo info;
        while (reader->take_next_sample(&raw, &info) == ReturnCode_t::RETCODE_OK) {
            if (!info.valid_data) continue;
            int64_t t = now_ns();
            {
                std::lock_guard<std::mutex> lock(*out_lock);
                uint16_t n_topic = static_cast<uint16_t>(topic.size());
                uint32_t n_data = static_cast<uint32_t>(raw.bytes.size());
                out->write(reinterpret_cast<const char*>(&n_topic), 2);
                out->write(reinterpret_cast<const char*>(&n_data), 4);
                out->write(reinterpret_cast<const char*>(&t), 8);
                out->write(topic.data(), n_topic);
                out->write(reinterpret_cast<const char*>(raw.bytes.data()), n_data);
            }
            *last = t;
            ++*got;
        }
    }
    void on_subscription_matched(DataReader*, const SubscriptionMatchedStatus& s) override {
        if (s.current_count_change > 0) say("matched " + topic);
    }
    void on_requested_incompatible_qos(DataReader*, const RequestedIncompatibleQosStatus& s) override {
        say("incompatible " + topic + " " + std::to_string(s.last_policy_id));
    }
    void on_sample_lost(DataReader*, const SampleLostStatus& s) override {
        say("lost " + topic + " " + std::to_string(s.total_count));
    }
};

int run_sub(const Options& o) {
    std::ofstream out(o.out, std::ios::binary);
    if (!out) throw std::runtime_error("cannot write " + o.out);
    std::mutex out_lock;
    std::atomic<long> got{0};
    std::atomic<int64_t> last{0};
    DomainParticipant* p = make_participant(o.domain);
    Subscriber* sub = p->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    std::vector<std::unique_ptr<ReaderListener>> listeners;
    for (auto& [topic, type] : o.topics) {
        DataReaderQos qos = DATAREADER_QOS_DEFAULT;
        qos.reliability().kind = o.best_effort ? BEST_EFFORT_RELIABILITY_QOS : RELIABLE_RELIABILITY_QOS;
        qos.durability().kind = VOLATILE_DURABILITY_QOS;
        qos.history().kind = KEEP_LAST_HISTORY_QOS;
        qos.history().depth = o.depth;
        qos.endpoint().history_memory_policy =
            eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
        qos.data_sharing().off();
        auto l = std::make_unique<ReaderListener>();
        l->topic = topic;
        l->out = &out;
        l->out_lock = &out_lock;
        l->got = &got;
        l->last = &last;
        DataReader* r = sub->create_datareader(make_topic(p, topic, type), qos, l.get());
        if (r == nullptr) throw std::runtime_error("cannot create a reader for " + topic);
        listeners.push_back(std::move(l));
    }
    say("ready");
    int64_t start = now_ns();
    while (!g_stop) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (o.count > 0 && got >= o.count) break;
        int64_t t = now_ns();
        if (got == 0 && t - start > o.start_s * 1e9) break;
        if (got > 0 && t - last > o.idle_s * 1e9) break;
    }
    p->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(p);
    {
        std::lock_guard<std::mutex> lock(out_lock);
        out.close();
    }
    say("got " + std::to_string(got.load()));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
    try {
        Options o = parse(argc, argv);
        if (o.mode == "pub") return run_pub(o);
        if (o.mode == "sub") return run_sub(o);
        throw std::runtime_error("mode must be pub or sub");
    } catch (const std::exception& err) {
        std::cerr << "peer: " << err.what() << std::endl;
        return 2;
    }
}
