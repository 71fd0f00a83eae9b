// The audit trail over gRPC against a real scheduler, registry and PostgreSQL: create, update
// and delete a job with an API admin token; ListAuditEvents shows the three events, newest
// first, with the token's id and name, the changed field's before and after, the caller's
// x-request-id and peer; refused and failed calls (a viewer's create, bad input, a missing job)
// write none; a viewer sees only its apps' events. Token administration (the scheduler's
// TokenAdminService) and app administration and executor drains (the registry's
// AppAdminService) are audited alike, in the same table, and no event holds a token's secret.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth/token_authenticator.h"
#include "common/testing/stack.h"
#include "common/testing/stack_test.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"
#include "pqxx/pqxx"

namespace jobwheel {
namespace {

using testing::Stack;

class AuditTest : public testing::StackTest {
 protected:
  void SetUp() override {
    Stack::Options options;
    options.migrate_database = true;
    ASSERT_NO_FATAL_FAILURE(StartStack(options));
    auto channel = grpc::CreateChannel(stack_->scheduler(0), grpc::InsecureChannelCredentials());
    admin_ = jobwheel::v1::JobAdminService::NewStub(channel);
    tokens_ = jobwheel::v1::TokenAdminService::NewStub(channel);
    apps_ = jobwheel::v1::AppAdminService::NewStub(
        grpc::CreateChannel(stack_->registry(0), grpc::InsecureChannelCredentials()));
  }

  // A new API token; its secret.
  std::string Token(const std::string& name, jobwheel::v1::Role role, const std::string& app,
                    int64_t* id = nullptr) {
    jobwheel::v1::CreateTokenRequest req;
    req.set_name(name);
    req.set_role(role);
    if (!app.empty()) req.add_apps(app);
    jobwheel::v1::CreateTokenResponse resp;
    grpc::Status s = tokens_->CreateToken(Ctx().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    if (id != nullptr) *id = resp.token().id();
    return resp.secret();
  }

  std::unique_ptr<grpc::ClientContext> As(const std::string& secret,
                                          const std::string& request_id = "") {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    c->AddMetadata("authorization", "Bearer " + secret);
    if (!request_id.empty()) c->AddMetadata("x-request-id", request_id);
    return c;
  }

  jobwheel::v1::ListAuditEventsResponse List(const std::string& secret,
                                             jobwheel::v1::ListAuditEventsRequest req = {}) {
    jobwheel::v1::ListAuditEventsResponse resp;
    grpc::Status s = admin_->ListAuditEvents(As(secret).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  // Events of jobs (the tokens a test makes are audited too).
  int64_t AuditRows() {
    pqxx::nontransaction tx(*db_);
    return tx.exec("SELECT count(*) FROM audit_events WHERE target LIKE 'job %'")[0][0]
        .as<int64_t>();
  }

  std::unique_ptr<jobwheel::v1::JobAdminService::Stub> admin_;
  std::unique_ptr<jobwheel::v1::TokenAdminService::Stub> tokens_;
  std::unique_ptr<jobwheel::v1::AppAdminService::Stub> apps_;
};

// The events of `resp` as "action target", newest first.
std::vector<std::string> Actions(const jobwheel::v1::ListAuditEventsResponse& resp) {
  std::vector<std::string> out;
  for (const auto& e : resp.events()) out.push_back(e.action() + " " + e.target());
  return out;
}

TEST_F(AuditTest, CreateUpdateDeleteAreAuditedAndRefusedCallsAreNot) {
  int64_t alice_id = 0;
  const std::string alice = Token("alice-admin", jobwheel::v1::ROLE_ADMIN, "", &alice_id);
  const std::string viewer = Token("vera-viewer", jobwheel::v1::ROLE_VIEWER, "demo");
  const std::string outsider = Token("otto-viewer", jobwheel::v1::ROLE_VIEWER, "other");

  jobwheel::v1::CreateJobRequest create;
  create.mutable_job()->set_app("demo");
  create.mutable_job()->set_name("nightly");
  create.mutable_job()->set_handler("echo");
  create.mutable_job()->mutable_schedule()->mutable_cron()->set_expression("0 0 2 * * ?");
  create.mutable_job()->set_script_source("");

  // Refused and failed calls first: none leaves an event.
  jobwheel::v1::CreateJobResponse created;
  grpc::Status s = admin_->CreateJob(As(viewer).get(), create, &created);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  jobwheel::v1::CreateJobRequest bad = create;
  bad.mutable_job()->set_app("");
  s = admin_->CreateJob(As(alice).get(), bad, &created);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  jobwheel::v1::UpdateJobRequest missing;
  *missing.mutable_job() = create.job();
  missing.mutable_job()->set_id(999999);
  jobwheel::v1::UpdateJobResponse updated;
  s = admin_->UpdateJob(As(alice).get(), missing, &updated);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_EQ(AuditRows(), 0);

  s = admin_->CreateJob(As(alice, "req-create-1").get(), create, &created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const int64_t id = created.job().id();
  // A refused update of the existing job (a viewer), then bad input (an unknown mask path).
  jobwheel::v1::UpdateJobRequest update;
  update.mutable_job()->set_id(id);
  update.mutable_job()->set_name("nightly-v2");
  update.mutable_update_mask()->add_paths("name");
  s = admin_->UpdateJob(As(viewer).get(), update, &updated);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  jobwheel::v1::UpdateJobRequest bad_mask = update;
  bad_mask.mutable_update_mask()->add_paths("no_such_field");
  s = admin_->UpdateJob(As(alice).get(), bad_mask, &updated);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(AuditRows(), 1);

  s = admin_->UpdateJob(As(alice).get(), update, &updated);
  ASSERT_TRUE(s.ok()) << s.error_message();
  jobwheel::v1::DeleteJobRequest del;
  del.set_id(id);
  jobwheel::v1::DeleteJobResponse deleted;
  s = admin_->DeleteJob(As(viewer).get(), del, &deleted);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  s = admin_->DeleteJob(As(alice).get(), del, &deleted);
  ASSERT_TRUE(s.ok()) << s.error_message();

  const std::string target = absl::StrCat("job ", id);
  jobwheel::v1::ListAuditEventsRequest of_job;
  of_job.set_target(target);
  const jobwheel::v1::ListAuditEventsResponse all = List(alice, of_job);
  ASSERT_EQ(all.events_size(), 3) << all.DebugString();
  EXPECT_EQ(AuditRows(), 3);
  const char* actions[] = {"DeleteJob", "UpdateJob", "CreateJob"};  // Newest first.
  for (int i = 0; i < 3; ++i) {
    const jobwheel::v1::AuditEvent& e = all.events(i);
    EXPECT_EQ(e.action(), actions[i]);
    EXPECT_EQ(e.target(), target);
    EXPECT_EQ(e.actor_name(), "alice-admin");
    EXPECT_EQ(e.actor_token_id(), alice_id);
    ASSERT_EQ(e.apps_size(), 1);
    EXPECT_EQ(e.apps(0), "demo");
    EXPECT_FALSE(e.peer().empty());
    EXPECT_FALSE(e.request_id().empty());
    EXPECT_TRUE(e.has_time());
  }
  EXPECT_EQ(all.events(2).request_id(), "req-create-1");
  EXPECT_NE(all.events(1).request_id(), all.events(0).request_id());  // Generated, distinct.
  // The update changed one field: the name, with its before and after.
  const jobwheel::v1::AuditEvent& u = all.events(1);
  ASSERT_EQ(u.changes_size(), 1) << u.DebugString();
  EXPECT_EQ(u.changes(0).field(), "name");
  EXPECT_EQ(u.changes(0).before(), "\"nightly\"");
  EXPECT_EQ(u.changes(0).after(), "\"nightly-v2\"");
  // The create lists what it set; the delete what was there.
  bool named = false;
  for (const auto& c : all.events(2).changes()) {
    named = named || (c.field() == "name" && c.before().empty() && c.after() == "\"nightly\"");
  }
  EXPECT_TRUE(named) << all.events(2).DebugString();
  EXPECT_GT(all.events(0).changes_size(), 0);

  // Filters and paging by key.
  jobwheel::v1::ListAuditEventsRequest by_action;
  by_action.set_action("UpdateJob");
  EXPECT_EQ(List(alice, by_action).events_size(), 1);
  jobwheel::v1::ListAuditEventsRequest by_actor;
  by_actor.set_actor("somebody-else");
  EXPECT_EQ(List(alice, by_actor).events_size(), 0);
  jobwheel::v1::ListAuditEventsRequest page = of_job;
  page.set_page_size(2);
  const jobwheel::v1::ListAuditEventsResponse first = List(alice, page);
  ASSERT_EQ(first.events_size(), 2);
  ASSERT_FALSE(first.next_page_token().empty());
  page.set_page_token(first.next_page_token());
  const jobwheel::v1::ListAuditEventsResponse second = List(alice, page);
  ASSERT_EQ(second.events_size(), 1);
  EXPECT_EQ(second.events(0).action(), "CreateJob");
  EXPECT_TRUE(second.next_page_token().empty());

  // Viewers see their apps' events only (the stack's own creation of app demo among them).
  EXPECT_EQ(Actions(List(viewer)),
            (std::vector<std::string>{"DeleteJob " + target, "UpdateJob " + target,
                                      "CreateJob " + target, "CreateApp app demo"}));
  EXPECT_EQ(List(outsider).events_size(), 0);
  // Bad filter input is refused naming the field.
  jobwheel::v1::ListAuditEventsRequest bad_page;
  bad_page.set_page_size(501);
  jobwheel::v1::ListAuditEventsResponse ignored;
  s = admin_->ListAuditEvents(As(alice).get(), bad_page, &ignored);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("page_size"), std::string::npos) << s.error_message();
}

TEST_F(AuditTest, TokenAndAppAdministrationAndDrainsAreAuditedWithoutSecrets) {
  int64_t alice_id = 0;
  const std::string alice = Token("alice-admin", jobwheel::v1::ROLE_ADMIN, "", &alice_id);
  const std::string viewer = Token("vic-viewer", jobwheel::v1::ROLE_VIEWER, "billing");
  const std::string op_demo = Token("olga-ops", jobwheel::v1::ROLE_OPERATOR, "demo");
  jobwheel::v1::ListAuditEventsRequest tokens_only;
  tokens_only.set_action("CreateToken");
  // Made with the bootstrap admin token: its name, no token id.
  const jobwheel::v1::ListAuditEventsResponse made = List(alice, tokens_only);
  ASSERT_EQ(made.events_size(), 3) << made.DebugString();
  EXPECT_EQ(made.events(2).actor_name(), "bootstrap-admin");
  EXPECT_EQ(made.events(2).actor_token_id(), 0);
  EXPECT_EQ(made.events(2).target(), absl::StrCat("token ", alice_id));
  bool role = false;
  for (const auto& c : made.events(2).changes()) {
    role = role || (c.field() == "role" && c.before().empty() && c.after() == "ADMIN");
  }
  EXPECT_TRUE(role) << made.events(2).DebugString();

  // Refused and failed token calls write nothing: a viewer's, bad input, a duplicate name, a
  // missing token.
  jobwheel::v1::CreateTokenRequest create;
  create.set_name("exec-billing");
  create.set_role(jobwheel::v1::ROLE_EXECUTOR);
  create.add_apps("billing");
  jobwheel::v1::CreateTokenResponse created;
  grpc::Status s = tokens_->CreateToken(As(viewer).get(), create, &created);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  jobwheel::v1::CreateTokenRequest unnamed = create;
  unnamed.set_name("");
  s = tokens_->CreateToken(As(alice).get(), unnamed, &created);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  jobwheel::v1::CreateTokenRequest taken = create;
  taken.set_name("vic-viewer");
  s = tokens_->CreateToken(As(alice).get(), taken, &created);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS) << s.error_message();
  jobwheel::v1::RevokeTokenRequest revoke;
  revoke.set_id(999999);
  jobwheel::v1::RevokeTokenResponse revoked;
  s = tokens_->RevokeToken(As(alice).get(), revoke, &revoked);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_EQ(List(alice, tokens_only).events_size(), 3);
  jobwheel::v1::ListAuditEventsRequest revokes;
  revokes.set_action("RevokeToken");
  EXPECT_EQ(List(alice, revokes).events_size(), 0);

  s = tokens_->CreateToken(As(alice, "req-token-1").get(), create, &created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const std::string exec_secret = created.secret();
  const std::string token_target = absl::StrCat("token ", created.token().id());
  revoke.set_id(created.token().id());
  ASSERT_TRUE(tokens_->RevokeToken(As(alice).get(), revoke, &revoked).ok());
  ASSERT_TRUE(tokens_->RevokeToken(As(alice).get(), revoke, &revoked).ok());  // Already: no event.

  // Apps and drains at the registry: refused and bad calls first.
  jobwheel::v1::CreateAppRequest app;
  app.mutable_app()->set_name("billing");
  app.mutable_app()->set_title("Billing");
  jobwheel::v1::CreateAppResponse app_created;
  s = apps_->CreateApp(As(viewer).get(), app, &app_created);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  jobwheel::v1::CreateAppRequest bad_app = app;
  bad_app.mutable_app()->set_name("bad name");
  s = apps_->CreateApp(As(alice).get(), bad_app, &app_created);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  s = apps_->CreateApp(As(alice).get(), app, &app_created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  jobwheel::v1::UpdateAppRequest update;
  *update.mutable_app() = app.app();
  update.mutable_app()->set_title("Billing jobs");
  jobwheel::v1::UpdateAppResponse app_updated;
  ASSERT_TRUE(apps_->UpdateApp(As(alice, "req-app-2").get(), update, &app_updated).ok());
  jobwheel::v1::SetExecutorDrainingRequest drain;
  drain.set_app("billing");
  drain.set_address("127.0.0.1:7201");
  drain.set_draining(true);
  drain.set_reason("maintenance");
  jobwheel::v1::SetExecutorDrainingResponse drained;
  s = apps_->SetExecutorDraining(As(op_demo).get(), drain, &drained);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  ASSERT_TRUE(apps_->SetExecutorDraining(As(alice).get(), drain, &drained).ok());
  ASSERT_TRUE(apps_->SetExecutorDraining(As(alice).get(), drain, &drained).ok());  // No change.
  drain.set_draining(false);
  ASSERT_TRUE(apps_->SetExecutorDraining(As(alice).get(), drain, &drained).ok());
  jobwheel::v1::DeleteAppRequest del;
  del.set_name("billing");
  jobwheel::v1::DeleteAppResponse deleted;
  ASSERT_TRUE(apps_->DeleteApp(As(alice).get(), del, &deleted).ok());

  const std::string executor = "executor billing/127.0.0.1:7201";
  jobwheel::v1::ListAuditEventsRequest by_alice;
  by_alice.set_actor("alice-admin");
  const jobwheel::v1::ListAuditEventsResponse all = List(alice, by_alice);
  EXPECT_EQ(Actions(all),
            (std::vector<std::string>{"DeleteApp app billing", "SetExecutorDraining " + executor,
                                      "SetExecutorDraining " + executor, "UpdateApp app billing",
                                      "CreateApp app billing", "RevokeToken " + token_target,
                                      "CreateToken " + token_target}));
  for (const auto& e : all.events()) {
    EXPECT_EQ(e.actor_token_id(), alice_id);
    EXPECT_FALSE(e.peer().empty());
    EXPECT_FALSE(e.request_id().empty());
  }
  EXPECT_EQ(all.events(6).request_id(), "req-token-1");
  EXPECT_EQ(all.events(3).request_id(), "req-app-2");
  ASSERT_EQ(all.events(3).changes_size(), 1) << all.events(3).DebugString();
  EXPECT_EQ(all.events(3).changes(0).field(), "title");
  EXPECT_EQ(all.events(3).changes(0).before(), "\"Billing\"");
  EXPECT_EQ(all.events(3).changes(0).after(), "\"Billing jobs\"");
  const jobwheel::v1::AuditEvent& on = all.events(2);
  ASSERT_EQ(on.changes_size(), 2) << on.DebugString();
  EXPECT_EQ(on.changes(0).field(), "draining");
  EXPECT_EQ(on.changes(0).after(), "true");
  EXPECT_EQ(on.changes(1).after(), "\"maintenance\"");
  ASSERT_EQ(all.events(1).changes_size(), 2) << all.events(1).DebugString();
  EXPECT_EQ(all.events(1).changes(0).after(), "false");
  ASSERT_EQ(all.events(5).changes_size(), 1) << all.events(5).DebugString();
  EXPECT_EQ(all.events(5).changes(0).field(), "revoke_time");
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(all.events(i).apps_size(), 1) << all.events(i).DebugString();
    EXPECT_EQ(all.events(i).apps(0), "billing");
  }
  EXPECT_EQ(all.events(6).apps_size(), 0);  // A token belongs to no app: admins see it.

  // A viewer of billing sees billing's app and drain events, not the tokens; an operator of
  // another app sees none of them.
  EXPECT_EQ(List(viewer).events_size(), 5);
  for (const std::string& seen : Actions(List(op_demo))) {
    EXPECT_EQ(seen.find("billing"), std::string::npos) << seen;
  }

  // No secret (nor its hash) is in the table.
  pqxx::nontransaction tx(*db_);
  for (const std::string& secret : {alice, viewer, op_demo, exec_secret}) {
    for (const std::string& needle : {secret, HashTokenSecret(secret)}) {
      EXPECT_EQ(tx.exec_params1("SELECT count(*) FROM audit_events a WHERE strpos(a::text, $1) > 0",
                                needle)[0]
                    .as<int>(),
                0);
    }
  }
}

TEST_F(AuditTest, PauseResumeAndTriggerAreAuditedANoOpPauseIsNot) {
  const std::string op = Token("olga-operator", jobwheel::v1::ROLE_OPERATOR, "demo");
  jobwheel::v1::CreateJobRequest create;
  create.mutable_job()->set_app("demo");
  create.mutable_job()->set_name("hourly");
  create.mutable_job()->set_handler("echo");
  create.mutable_job()->mutable_schedule()->mutable_none();
  jobwheel::v1::CreateJobResponse created;
  grpc::Status s = admin_->CreateJob(As(op).get(), create, &created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const int64_t id = created.job().id();  // Created paused (enabled unset).
  jobwheel::v1::ResumeJobRequest resume;
  resume.set_id(id);
  jobwheel::v1::ResumeJobResponse resumed;
  ASSERT_TRUE(admin_->ResumeJob(As(op).get(), resume, &resumed).ok());
  jobwheel::v1::PauseJobRequest pause;
  pause.set_id(id);
  jobwheel::v1::PauseJobResponse paused;
  ASSERT_TRUE(admin_->PauseJob(As(op).get(), pause, &paused).ok());
  ASSERT_TRUE(admin_->PauseJob(As(op).get(), pause, &paused).ok());  // Already paused.
  jobwheel::v1::TriggerJobRequest trigger;
  trigger.set_id(id);
  trigger.set_param("p1");
  jobwheel::v1::TriggerJobResponse fired;
  ASSERT_TRUE(admin_->TriggerJob(As(op).get(), trigger, &fired).ok());

  jobwheel::v1::ListAuditEventsRequest of_job;
  of_job.set_target(absl::StrCat("job ", id));
  const jobwheel::v1::ListAuditEventsResponse all = List(op, of_job);
  ASSERT_EQ(all.events_size(), 4) << all.DebugString();
  EXPECT_EQ(all.events(0).action(), "TriggerJob");
  EXPECT_EQ(all.events(1).action(), "PauseJob");
  EXPECT_EQ(all.events(2).action(), "ResumeJob");
  EXPECT_EQ(all.events(3).action(), "CreateJob");
  for (const auto& e : all.events()) EXPECT_EQ(e.actor_name(), "olga-operator");
  ASSERT_EQ(all.events(2).changes_size(), 1) << all.events(2).DebugString();
  EXPECT_EQ(all.events(2).changes(0).field(), "enabled");
  EXPECT_EQ(all.events(2).changes(0).before(), "false");
  EXPECT_EQ(all.events(2).changes(0).after(), "true");
  bool fire_id = false, param = false;
  for (const auto& c : all.events(0).changes()) {
    fire_id = fire_id || (c.field() == "fire_id" && c.after() == absl::StrCat(fired.fire_id()));
    param = param || (c.field() == "param" && c.after() == "p1");
  }
  EXPECT_TRUE(fire_id && param) << all.events(0).DebugString();
}

}  // namespace
}  // namespace jobwheel
