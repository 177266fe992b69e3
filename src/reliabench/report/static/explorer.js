(function(){
"use strict";
var D=JSON.parse(document.getElementById("rb-data").textContent);
var OUT={P:"passed",F:"failed",E:"error",S:"skipped","-":"not run"};
function esc(s){return String(s==null?"":s).replace(/[&<>"']/g,function(c){return {"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c];});}
function el(id){return document.getElementById(id);}
function num(x,d){return x==null?"-":(typeof x==="number"?x.toFixed(d==null?2:d):esc(x));}
var KW=/\b(def|class|return|import|from|as|if|elif|else|for|while|try|except|finally|with|raise|lambda|yield|pass|break|continue|and|or|not|in|is|None|True|False|async|await|global|nonlocal|assert|del)\b/g;
function hl(t){
  var out="",i=0,m,re=/("""|'''|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|#.*$)/g;
  while((m=re.exec(t))!==null){
    out+=esc(t.slice(i,m.index)).replace(KW,'<span class="kw">$1</span>');
    out+=(m[0].charAt(0)==="#"?'<span class="cm">':'<span class="st">')+esc(m[0])+"</span>";
    i=m.index+m[0].length;
  }
  return out+esc(t.slice(i)).replace(KW,'<span class="kw">$1</span>');
}
/* heatmap sorting and filtering */
var table=el("hm-table");
if(table){
  var tbody=table.tBodies[0];
  Array.prototype.forEach.call(document.querySelectorAll(".hm-tools button"),function(b){
    b.addEventListener("click",function(){
      var key=b.getAttribute("data-sort"),rows=Array.prototype.slice.call(tbody.rows);
      rows.sort(function(x,y){
        if(key==="task")return x.dataset.task<y.dataset.task?-1:(x.dataset.task>y.dataset.task?1:0);
        var a=parseFloat(x.dataset[key]),c=parseFloat(y.dataset[key]);
        return (c-a)||(x.dataset.task<y.dataset.task?-1:1);
      });
      rows.forEach(function(r){tbody.appendChild(r);});
    });
  });
  var only=el("hm-flaky-only");
  if(only)only.addEventListener("change",function(){
    Array.prototype.forEach.call(tbody.rows,function(r){
      r.style.display=(only.checked&&r.dataset.flaky==="0")?"none":"";});
  });
  if(D.explorer){
    Array.prototype.forEach.call(table.querySelectorAll("td.hm"),function(td){
      function open(){showPair(td.dataset.task,td.dataset.agent);}
      td.addEventListener("click",open);
      td.addEventListener("keydown",function(e){if(e.key==="Enter")open();});
    });
  }
}
function pairTable(task,agent){
  var ids=(D.tasks[task].agents[agent]||[]),h=['<table><tr><th>rollout</th><th>status</th><th>verdict</th>',
    '<th>tests passed</th><th>seconds</th><th>isolation</th><th>findings</th><th>flags</th></tr>'];
  ids.forEach(function(id){
    var s=D.rollouts[id],flags=(s.tamper?'<span class="badge bad">tamper</span>':'')+(s.forged?'<span class="badge bad">forged</span>':'');
    h.push('<tr class="rclick" data-id="'+esc(id)+'"><td>#'+s.rollout+'</td><td>'+esc(s.status)+'</td><td>'+
      (s.passes?'<span class="ok">pass</span>':'<span class="bad">fail</span>')+'</td><td>'+
      (s.nt==null?"-":s.np+"/"+s.nt)+'</td><td>'+num(s.seconds)+'</td><td>'+esc(s.isolation||"-")+
      '</td><td>'+(s.findings||"")+'</td><td>'+flags+'</td></tr>');
  });
  h.push("</table>");return h.join("");
}
function sideBySide(task){
  var T=D.tasks[task],cols=[];
  Object.keys(T.agents).sort().forEach(function(a){T.agents[a].forEach(function(id){cols.push(id);});});
  if(!T.tests.length)return '<p class="note">No per-test outcomes recorded for this task.</p>';
  var flaky={};T.flaky_tests.forEach(function(n){flaky[n]=1;});
  var sec={};T.security.forEach(function(n){sec[n]=1;});
  var h=['<table class="side"><tr><th>test</th>'];
  cols.forEach(function(id){var s=D.rollouts[id];
    h.push('<th class="rc" data-id="'+esc(id)+'" title="'+esc(s.agent)+' #'+s.rollout+'">'+esc(s.agent)+" #"+s.rollout+"</th>");});
  h.push("<th>reading</th></tr>");
  T.tests.forEach(function(name,i){
    var fails=0,ran=0,agentsFail={};
    cols.forEach(function(id){var c=D.rollouts[id].codes.charAt(i);
      if(c==="F"||c==="E"){fails++;agentsFail[D.rollouts[id].agent]=1;} if(c&&c!=="-"&&c!=="S")ran++;});
    var reading=fails===0?"":(flaky[name]?'<span class="warn">flaky test: identical code, different outcomes</span>':
      (fails===ran?'<span class="bad">fails in every rollout</span>':
       "fails in "+fails+"/"+ran+" rollouts ("+Object.keys(agentsFail).length+" agent(s))"));
    h.push("<tr><td>"+esc(name.split("::").slice(-1)[0])+(sec[name]?' <span class="badge warn">security</span>':"")+"</td>");
    cols.forEach(function(id){var c=D.rollouts[id].codes.charAt(i)||"-";
      h.push('<td class="c '+c+'" title="'+esc(name)+": "+OUT[c]+'">'+(c==="P"?"":c)+"</td>");});
    h.push("<td>"+reading+"</td></tr>");
  });
  h.push("</table>");
  return h.join("");
}
function showPair(task,agent,want){
  var box=el("rb-explorer"),ids=D.tasks[task].agents[agent]||[];
  if(table)Array.prototype.forEach.call(table.querySelectorAll("td.hm"),function(x){
    x.classList.toggle("sel",x.dataset.task===task&&x.dataset.agent===agent);});
  var c=ids.filter(function(id){return D.rollouts[id].passes;}).length;
  var sim=ids.length&&D.rollouts[ids[0]].simulated?' <span class="sim">[SIMULATED]</span>':"";
  box.innerHTML='<div class="panel" id="rb-pair"><h3>'+esc(task)+" / "+esc(agent)+sim+": "+c+"/"+ids.length+
    ' rollouts pass</h3>'+pairTable(task,agent)+'</div><div id="rb-rollout"></div>'+
    '<div class="panel" id="rb-side"><h3>All rollouts of '+esc(task)+' side by side</h3>'+
    '<p class="note">Rows: hidden tests; columns: rollouts (click a column head to open it). F failed, E error, '+
    'S skipped, blank passed. A test failing for one agent only points at that agent; failing for every agent, '+
    'at the task or the test; a test whose outcome differs between rollouts with byte-identical code is flaky.</p>'+
    sideBySide(task)+"</div>";
  Array.prototype.forEach.call(box.querySelectorAll("[data-id]"),function(tr){
    tr.addEventListener("click",function(){showRollout(tr.getAttribute("data-id"));});});
  if(ids.length)showRollout(want||ids.filter(function(id){return !D.rollouts[id].passes;})[0]||ids[0]);
  box.scrollIntoView({block:"start"});
}
function getDetail(id,cb){
  if(D.details[id]){cb(D.details[id]);return;}
  if(D.live){
    var t=/[?&]token=([^&#]*)/.exec(location.search);
    fetch("rollout?id="+encodeURIComponent(id)+(t?"&token="+t[1]:"")).then(function(r){
      if(!r.ok)throw new Error("HTTP "+r.status);return r.json();}).then(function(d){D.details[id]=d;cb(d);})
      .catch(function(e){cb(null,String(e));});
    return;
  }
  cb(null,"this rollout's detail was left out to keep the file bounded: "+D.remedy+".");
}
function diffHtml(d){
  if(!d.diff.length)return '<p class="note">'+(d.artifacts?"The agent changed nothing (empty diff).":"No stored diff.")+"</p>";
  var h=[];
  d.diff.forEach(function(f){
    h.push('<div class="diff"><div class="h"><b>'+esc(f.path)+"</b></div>");
    f.lines.forEach(function(l){
      var k=l[0],cls=k==="+"?"a":k==="-"?"d":k==="@"?"h":k==="!"?"n":"",hit=l[3].length?" hit":"";
      var mark=k==="@"||k==="!"?"":k;
      h.push('<div class="'+cls+hit+'"><span class="ln">'+(l[2]==null?"":l[2])+"</span>"+esc(mark)+
        (k==="@"||k==="!"?esc(l[1]):hl(l[1]))+"</div>");
      l[3].forEach(function(i){var f2=d.findings[i];
        h.push('<div class="fd finding">&#9888; '+esc(f2.tool)+" "+esc(f2.rule)+" ("+esc(f2.severity)+"/"+esc(f2.confidence)+
          (f2.cwe!=null?", CWE-"+f2.cwe:"")+"): "+esc(f2.message)+"</div>");});
    });
    h.push("</div>");
  });
  return h.join("");
}
function renderRollout(d){
  var s=D.rollouts[d.id],h=[],ph=d.phases||{};
  h.push('<div class="panel" id="rb-detail"><h3>'+esc(d.task)+" / "+esc(d.agent)+" rollout #"+d.rollout+
    (d.simulated?' <span class="sim">[SIMULATED]</span>':"")+"</h3>");
  h.push("<table><tr><th>status</th><td>"+esc(d.status)+"</td><th>verdict</th><td>"+
    (d.passes?'<span class="ok">pass</span>':'<span class="bad">fail</span>')+"</td><th>isolation</th><td>"+
    esc(d.isolation||"unknown")+(d.isolation==="none"?' <span class="badge bad">no sandbox</span>':"")+"</td></tr>"+
    "<tr><th>duration (s)</th><td>"+num(d.seconds,3)+"</td><th>tokens</th><td>"+num(d.tokens,0)+"</td><th>USD</th><td>"+
    num(d.usd,4)+"</td></tr>"+
    (Object.keys(ph).length?"<tr><th>phases</th><td colspan=5>"+Object.keys(ph).map(function(k){return esc(k)+" "+num(ph[k]);}).join(", ")+"</td></tr>":"")+
    (d.seed!=null?"<tr><th>seed</th><td colspan=5>"+esc(d.seed)+"</td></tr>":"")+"</table>");
  var flags=[];
  if(d.tamper)flags.push('<span class="badge bad">tamper suspected</span>'+(d.tamper_files.length?" files: "+esc(d.tamper_files.join(", ")):""));
  if(d.forged)flags.push('<span class="badge bad">forged test outcomes</span> the test report did not come from the harness');
  h.push('<p class="flags">'+(flags.length?flags.join("<br>"):'<span class="badge ok">no tamper or forgery flag</span>')+"</p>");
  if(d.reason)h.push('<p class="note">reason: '+esc(d.reason)+"</p>");
  if(d.cuts.length)h.push('<p class="note cut">cut: '+esc(d.cuts.join("; "))+"</p>");
  var func=d.tests.filter(function(t){return !t[2];}),secu=d.tests.filter(function(t){return t[2];});
  function testRows(rows){
    var x=["<table class=\"tests\"><tr><th>test</th><th>outcome</th></tr>"];
    rows.forEach(function(t){
      var cls=t[1]==="passed"?"ok":(t[1]==="skipped"?"":"bad");
      x.push('<tr><td>'+esc(t[0])+'</td><td class="'+cls+'">'+esc(t[1])+"</td></tr>");
      if(t[3])x.push('<tr><td colspan=2><pre class="msg failure-message">'+esc(t[3])+"</pre></td></tr>");
    });
    x.push("</table>");return x.join("");
  }
  function testTable(rows,title){
    if(!rows.length)return "";
    var bad=rows.filter(function(t){return t[1]==="failed"||t[1]==="error";});
    var rest=rows.filter(function(t){return t[1]!=="failed"&&t[1]!=="error";});
    var x=["<h4>"+title+" ("+rest.length+"/"+rows.length+" not failed)</h4>"];
    if(bad.length)x.push(testRows(bad));
    if(rest.length>12&&bad.length)x.push("<details><summary>"+rest.length+" tests that did not fail</summary>"+testRows(rest)+"</details>");
    else if(rest.length)x.push(testRows(rest));
    return x.join("");
  }
  h.push(testTable(func,"Hidden tests"));
  if(d.messages_from)h.push('<p class="note">Failure messages: '+esc(d.messages_from)+".</p>");
  h.push(secu.length?testTable(secu,"Security tests"):'<p class="note">No dynamic security tests in this task.</p>');
  h.push("<h4>Diff against the starter workspace</h4>"+diffHtml(d));
  if(d.findings.length){
    h.push("<h4>Scanner findings ("+d.findings.length+")</h4><table><tr><th>tool</th><th>rule</th><th>severity</th><th>CWE</th><th>where</th><th>message</th></tr>");
    d.findings.forEach(function(f,i){
      h.push("<tr><td>"+esc(f.tool)+"</td><td>"+esc(f.rule)+"</td><td>"+esc(f.severity)+"/"+esc(f.confidence)+"</td><td>"+
        (f.cwe!=null?"CWE-"+f.cwe:"-")+"</td><td>"+esc(f.path)+":"+(f.line==null?"?":f.line)+
        (d.unplaced.indexOf(i)>=0?' <span class="badge">not on a shown diff line</span>':"")+"</td><td style=\"white-space:normal\">"+esc(f.message)+"</td></tr>");
    });
    h.push("</table>");
  }else h.push('<p class="note">No scanner findings'+(d.scan_errors.length?"":" (scanned files were clean, or nothing was scanned)")+".</p>");
  if(d.scan_errors.length)h.push('<p class="warn">Files the scanners could not read (not clean): '+esc(d.scan_errors.join("; "))+"</p>");
  h.push("<h4>"+(d.log_kind==="none"?"Agent log":esc(d.log_kind))+"</h4>"+(d.log?'<pre class="log">'+esc(d.log)+"</pre>":'<p class="note">No log stored.</p>'));
  h.push("</div>");
  el("rb-rollout").innerHTML=h.join("");
  Array.prototype.forEach.call(document.querySelectorAll("#rb-pair tr.rclick"),function(tr){
    tr.classList.toggle("rsel",tr.getAttribute("data-id")===d.id);});
}
function showRollout(id){
  if(history.replaceState)history.replaceState(null,"","#rollout="+encodeURIComponent(id));
  openRollout(id);
}
function openRollout(id){
  if(!D.rollouts[id])return;
  var s=D.rollouts[id];
  if(!el("rb-pair")||el("rb-pair").querySelector('tr[data-id="'+CSS.escape(id)+'"]')===null){
    showPair(s.task,s.agent,id);return;}
  var box=el("rb-rollout");
  box.innerHTML='<p class="note">loading...</p>';
  getDetail(id,function(d,err){
    if(!d){box.innerHTML='<div class="panel"><p class="warn">'+esc(err)+"</p></div>";return;}
    renderRollout(d);
  });
}
window.reliabenchExplorer={showPair:showPair,showRollout:showRollout};
/* a link to a rollout (#rollout=ID) opens it */
var m=/^#rollout=(.+)$/.exec(location.hash);
if(m&&D.explorer){try{var id0=decodeURIComponent(m[1]);if(D.rollouts[id0])showRollout(id0);}catch(e){}}
})();
