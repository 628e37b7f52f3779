package server

import (
	"testing"

	"github.com/tablegate/tablegate/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
