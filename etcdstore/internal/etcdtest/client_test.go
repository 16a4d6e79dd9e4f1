package etcdtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/indextable/indextable/etcdstore/internal/etcdtest"
)

func TestClient(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	tests := []struct {
		name      string
		endpoints []string
		want      []string
	}{
		{"every member", nil, c.Endpoints()},
		{"given", []string{"http://127.0.0.1:1"}, []string{"http://127.0.0.1:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, c.Client(t, tt.endpoints...).Endpoints())
		})
	}
	_, err := c.Client(t).Get(t.Context(), "k")
	require.NoError(t, err)
}
