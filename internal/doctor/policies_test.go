package doctor

import (
	"strings"
	"testing"
)

// TestPerRowCalls reads deparsed policy expressions as pg_get_expr prints
// them.
func TestPerRowCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want []string // substrings of the findings, in order
	}{
		{`(owner_id = ( SELECT auth.uid() AS uid))`, nil},
		{`(owner_id = auth.uid())`, []string{"auth.uid() per row"}},
		{`((tenant_id = tablegate.current_tenant_id()) AND tablegate.is_member('tenant'::text, (tenant_id)::text, NULL::text))`,
			[]string{"tablegate.current_tenant_id() per row", "tablegate.is_member('tenant', …) per row"}},
		{`((tenant_id = ( SELECT tablegate.current_tenant_id() AS current_tenant_id)) AND tablegate.is_member('tenant'::text, (tenant_id)::text, NULL::text))`,
			[]string{"tablegate.is_member('tenant', …) per row"}},
		{`(tenant_id = ( SELECT tablegate.member_tenant_id(NULL::text) AS member_tenant_id))`, nil},
		{`(tenant_id = tablegate.member_tenant_id('admin'::text))`, []string{"tablegate.member_tenant_id('admin'::text) per row"}},
		{`(tenant_id = ( SELECT tablegate.full_member_tenant_id() AS full_member_tenant_id))`, nil},
		{`(tenant_id = tablegate.full_member_tenant_id())`, []string{"tablegate.full_member_tenant_id() per row"}},
		{`((NOT ( SELECT tablegate.is_anonymous() AS is_anonymous)) AND tablegate.has_role('editor'::text))`,
			[]string{"tablegate.has_role('editor'::text) per row"}},
		// a column argument: no per-statement form
		{`tablegate.is_member('project'::text, (project_id)::text, NULL::text)`, nil},
		{`tablegate.claim_text((path)::text)`, nil},
		// names inside string literals are not calls
		{`(note <> 'tablegate.current_tenant_id()'::text)`, nil},
		{`(note <> 'it''s (SELECT x'::text) AND (owner_id = auth.uid())`, []string{"auth.uid() per row"}},
		// the realtime policy of the SQL module
		{`((extension = ANY (ARRAY['broadcast'::text, 'presence'::text])) AND (NOT ( SELECT tablegate.is_anonymous() AS is_anonymous)) AND (split_part(topic, ':'::text, 2) = ( SELECT (tablegate.current_tenant_id())::text AS current_tenant_id)))`, nil},
		{`tablegate.tenant_topic_allowed(topic)`, nil},
	} {
		got := perRowCalls(tc.expr)
		if len(got) != len(tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.expr, got, tc.want)
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tc.want[i]) {
				t.Errorf("%s: finding %d = %q, want %q", tc.expr, i, got[i], tc.want[i])
			}
		}
	}
}
